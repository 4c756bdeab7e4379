"""Every role on its own model: two scripted OpenAI-compatible endpoints on 127.0.0.1 stand for two models; each
role's calls reach the endpoint and model its entry names, for every graph; calls and tokens are counted per model
and priced; the cost budget stops a search; a role name that is wrong, or that the run never calls, is refused."""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Callable

import pytest

from codeforest.api import solve
from codeforest.context import ROLE_NAMES, Context
from codeforest.cost import add_cost, default_price, money_spent
from codeforest.registry import graph_names, graph_roles
from codeforest.scripted_endpoint import ScriptedEndpoint, any_role_reply

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}
SMALL = {"codetree": {"codetree_max_programs": 4}, "rethink_mcts": {"rethink_rollouts": 2},
         "bester": {"bester_depth": 1, "bester_width": 2}, "reflexion": {"bester_depth": 1, "bester_width": 2},
         "rpm_mcts": {"rpm_rollouts": 1, "rpm_kb": False, "rpm_width": 2}, "gvr": {"gvr_rollouts": 2},
         "gvr_bon": {"gvr_bon_n": 2}, "resample": {"resample_n": 2, "selector": "differential", "min_candidates": 2,
                                                   "tester_inputs": 2}}
AGENT_ROLES = {  # each agent function and the role its calls count under (hand-written, from ROLE_NAMES' texts)
    "thinker": {"strategies": "thinker", "reflections": "thinker", "self_reflection": "reflection",
                "thoughts": "thinker", "solution_steps": "thinker", "classify_topic": "topic", "next_step": "thinker",
                "full_steps": "thinker", "extract_steps": "thinker", "edit_step": "thinker", "one_thought": "thinker",
                "sampled_thoughts": "thinker", "chain_step": "thinker"},
    "critic": {"score_tests": "critic", "verify": "critic", "self_evaluate": "critic", "analyze_blocks": "critic",
               "analyze_blocks_released": "critic", "score_steps": "critic", "evaluate_solution": "critic",
               "locate_error": "locator"},
    "debugger": {"repair": "debugger", "repair_from_reflection": "debugger"}, "judge": {"compare_outputs": "judge"},
    "rethink": {"rethink": "rethink", "refine": "rethink"}, "solver": {"write_code": "solver"},
    "tester": {"write_inputs": "tester"}, "verifier": {"locate_flawed": "locator", "score_thoughts": "verifier"},
}


def varied_reply() -> Callable[[dict], str]:
    """``any_role_reply`` with its programs wrong, wrong another way, right, and right in other words, in turn, so a
    search meets failing and passing programs and has distinct ones to choose from."""
    bodies = itertools.cycle(["None", "args[0]", "args[0] + 1", "1 + args[0]"])
    return lambda body: any_role_reply(body).replace("return None", f"return {next(bodies)}")


@pytest.fixture(scope="module")
def endpoints():
    with ScriptedEndpoint([], respond=any_role_reply) as first, ScriptedEndpoint([], respond=any_role_reply) as second:
        yield first, second


def test_every_agent_function_that_calls_a_model_names_its_role():
    import importlib

    for name, expected in AGENT_ROLES.items():
        module = importlib.import_module(f"codeforest.agents.{name}")
        calling = {fn for fn, obj in vars(module).items() if inspect.isfunction(obj) and obj.__module__ ==
                   module.__name__ and "model" in inspect.signature(obj).parameters and not fn.startswith("_")}
        assert calling == set(expected), name  # no model-calling agent function left untagged
        assert {fn: getattr(module, fn).role for fn in calling} == expected
    assert {r for roles in AGENT_ROLES.values() for r in roles.values()} == set(ROLE_NAMES)


CASES = {graph: [SMALL.get(graph, {})] for graph in graph_names()}  # and settings that call the other roles
CASES["codetree"] += [{**SMALL["codetree"], "codetree_evaluator": "verifier"},
                      {**SMALL["codetree"], "codetree_abort": False}]  # no Critic score above 0 keeps a node
CASES["rethink_mcts"] += [{"rethink_rollouts": 6, "rethink_evaluator": "verifier", "rethink_locate": "verifier"}]
CASES["rpm_mcts"] += [{**SMALL["rpm_mcts"], "rpm_kb": True}]
CASES["gvr"] += [{**SMALL["gvr"], "gvr_verify": "llm_locate"}]
CASES["gvr_bon"] += [{**SMALL["gvr_bon"], "gvr_bon_verify": "llm_locate"}]


def routed_calls(graph: str, settings: dict, replies: Callable[[dict], str]) -> set[str]:
    """One solve with every role the graph calls under these settings on a model name of its own, on the first or
    the second endpoint in turn (the search model at the first): no call is left on the search model, each
    arrives where its entry says, and the cost counts each model's calls and tokens as the endpoints saw them.
    Both endpoints answer with ``replies``. The roles called."""
    with ScriptedEndpoint([], respond=replies) as first, ScriptedEndpoint([], respond=replies) as second:
        return _routed_calls(graph, settings, first, second)


def _routed_calls(graph: str, settings: dict, first: ScriptedEndpoint, second: ScriptedEndpoint) -> set[str]:
    before = (len(first.requests), len(second.requests))
    roles = sorted(graph_roles(graph, settings))
    where = {role: (first, second)[i % 2] for i, role in enumerate(roles)}
    context = {"model": "search", "base_url": first.url, "structured_output": False, "test_timeout": 2.0,
               "roles": {role: {"model": f"m-{role}", "base_url": at.url} for role, at in where.items()},
               **settings}
    out = solve(PROBLEM, graph, context=context)
    seen = {id(first): [r["model"] for r in first.requests[before[0]:]],
            id(second): [r["model"] for r in second.requests[before[1]:]]}
    assert "search" not in seen[id(first)]  # every call is some role's
    for at, models in seen.items():
        assert all(where[m.removeprefix("m-")] is (first if at == id(first) else second) for m in models)
    called = seen[id(first)] + seen[id(second)]
    counted = out["cost"]["models"]
    assert {m: c["llm_calls"] for m, c in counted.items()} == {m: called.count(m) for m in set(called)}
    assert all(c["prompt_tokens"] == 11 * c["llm_calls"] and c["completion_tokens"] == 7 * c["llm_calls"]
               for c in counted.values())  # the scripted usage: 11 + 7 tokens a call
    return {m.removeprefix("m-") for m in called}


@pytest.mark.parametrize("graph", graph_names())
def test_each_roles_calls_reach_the_model_and_endpoint_its_entry_names(graph):
    """Under each case's settings the graph calls only the roles it names for them, each where its entry says;
    over the cases, every role it names is called."""
    named, called = set(), set()
    for settings in CASES[graph]:
        roles = graph_roles(graph, settings)
        asked = routed_calls(graph, settings, varied_reply())
        assert asked <= roles, settings
        named, called = named | roles, called | asked
    assert called == named


def test_the_selectors_old_settings_are_the_tester_and_judge_entries(endpoints):
    """Two programs passing the public tests give the selector a choice: its Tester asks selector_model."""
    _, second = endpoints
    before, programs = len(second.requests), iter(["x + 1", "1 + x"] * 2)
    with ScriptedEndpoint([], respond=lambda body: f"```python\ndef inc(x):\n    return {next(programs)}\n```") \
            as coder:
        context = {"model": "search", "base_url": coder.url, "structured_output": False, "selector": "differential",
                   "min_candidates": 2, "tester_inputs": 2, "resample_n": 2, "selector_model": "big",
                   "selector_base_url": second.url}
        solve(PROBLEM, "resample", context=context)
    assert {r["model"] for r in second.requests[before:]} == {"big"}
    assert Context(**{k: v for k, v in context.items() if k in Context.model_fields}).role_entries()["judge"].model \
        == "big"


def test_a_role_entry_fixes_its_temperature_and_keeps_what_the_graph_binds(endpoints):
    """resample binds its temperature and a seed per sample; the solver's entry fixing 0.3 and 77 output tokens
    keeps the seeds."""
    first, second = endpoints
    before = len(second.requests)
    context = {"model": "search", "base_url": first.url, "structured_output": False, "resample_n": 2,
               "resample_temperature": 0.8,
               "roles": {"solver": {"model": "coder", "base_url": second.url, "temperature": 0.3,
                                    "max_tokens": 77}}}
    solve(PROBLEM, "resample", context=context)
    sent = second.requests[before:]
    assert [r["temperature"] for r in sent] == [0.3, 0.3] and len({r.get("seed") for r in sent}) == 2
    assert [r["max_completion_tokens"] for r in sent] == [77, 77]  # not the solver's default limit, 4,096


def test_a_role_entry_fixes_the_temperature_and_limit_of_one_request_for_several_replies(endpoints):
    """GVR's released fallback asks one request for n thoughts at a temperature and output limit of its own; the
    thinker's entry fixing 0.3 and 77 output tokens stands over them."""
    from langchain_openai import ChatOpenAI

    from codeforest.agents import thinker
    from codeforest.agents.base import Route, routing
    from codeforest.prompts import load_prompt

    first, second = endpoints
    search = ChatOpenAI(base_url=first.url, api_key="k", model="search")
    own = ChatOpenAI(base_url=second.url, api_key="k", model="coder", temperature=0.3, max_tokens=77)
    before = len(second.requests)
    with routing({"thinker": Route(own, frozenset({"temperature", "max_tokens"}), None)}.get):
        thinker.sampled_thoughts(search, load_prompt("thinker_gvr"), PROBLEM, previous="", n=2, released=True,
                                 temperature=0.7, max_tokens=2048)
    sent = second.requests[before:]
    assert [(r["model"], r["temperature"], r["max_completion_tokens"], r["n"]) for r in sent] == [("coder", 0.3, 77, 2)]


def test_bad_role_names_are_refused_by_name(endpoints):
    with pytest.raises(ValueError, match="unknown role.*critc.*the roles: thinker"):
        Context(roles={"critc": {"model": "x"}})
    first, _ = endpoints
    with pytest.raises(ValueError, match="roles names judge, tester, which this run never calls; the roles it calls: "
                                         "critic, debugger, solver, thinker\n"):
        solve(PROBLEM, "codetree", context={"model": "search", "base_url": first.url, "structured_output": False,
                                            "roles": {"tester": {"model": "t"}, "judge": {"model": "j"}}})


def test_cost_per_model_adds_up_and_is_priced_by_hand():
    a = {"llm_calls": 1, "prompt_tokens": 100, "completion_tokens": 10,
         "models": {"qwen2.5-coder-0.5b-instruct-q4_k_m": {"llm_calls": 1, "prompt_tokens": 100,
                                                            "completion_tokens": 10}}}
    b = {"llm_calls": 2, "prompt_tokens": 300, "completion_tokens": 50,
         "models": {"qwen2.5-coder-1.5b-instruct-q4_k_m": {"llm_calls": 2, "prompt_tokens": 300,
                                                            "completion_tokens": 50}}}
    total = add_cost(add_cost(a, b), a)
    assert total["models"]["qwen2.5-coder-0.5b-instruct-q4_k_m"] == {"llm_calls": 2, "prompt_tokens": 200,
                                                                     "completion_tokens": 20}
    # 0.5 per million for the 0.5B's 220 tokens, 1.5 for the 1.5B's 350: (110 + 525) / 1e6
    assert money_spent(total, {}) == pytest.approx(635e-6)
    assert money_spent(total, {"qwen2.5-coder-1.5b-instruct-q4_k_m": (2.0, 10.0)}) == pytest.approx(
        (220 * 0.5 + 300 * 2 + 50 * 10) / 1e6)
    assert default_price("gpt-4o-mini") is None and money_spent({**b, "models": {"gpt-4o-mini": {}}}, {}) is None
    assert default_price("Llama-3.1-8B-Instruct.gguf") == (8.0, 8.0)
    assert default_price("Qwen3-30B-A3B-Instruct") == (30.0, 30.0) and default_price("mixtral-8x7b") == (56.0, 56.0)


def test_the_cost_budget_stops_a_search_before_the_call_that_would_pass_it(endpoints):
    """Each scripted call is 11 prompt and 7 completion tokens; at 1,000 per million tokens a call costs 0.018, so
    a budget of 0.05 lets three calls start (0, 0.018, 0.036 spent) and stops the fourth."""
    first, _ = endpoints
    context = {"model": "search", "base_url": first.url, "structured_output": False, "resample_n": 10,
               "cost_budget": 0.05, "prices": {"search": [1000, 1000]}}
    out = solve(PROBLEM, "resample", context=context)
    assert out["stop_reason"] == "cost_budget" and out["cost"]["llm_calls"] == 3
    with pytest.raises(ValueError, match="cost_budget needs a price for search"):
        solve(PROBLEM, "resample", context={**context, "prices": {}})


def test_the_cost_budget_adds_each_models_calls_at_its_own_price(endpoints):
    """codetree writing on one endpoint at 1,000 per million tokens and judging on the other at 3,000: a call is
    11 + 7 tokens, so 0.018 on the search model and 0.054 on the critic's; no call starts once 0.05 is spent, and
    the last call started below it."""
    first, second = endpoints
    context = {"model": "search", "base_url": first.url, "structured_output": False, "codetree_max_programs": 20,
               "cost_budget": 0.05, "prices": {"search": [1000, 1000], "critic": [3000, 3000]},
               "roles": {"critic": {"model": "critic", "base_url": second.url}}}
    out = solve(PROBLEM, "codetree", context=context)
    calls = {name: counts["llm_calls"] for name, counts in out["cost"]["models"].items()}
    # the strategies and the first program (0.036 spent, below 0.05), then its critic's score (0.09): the budget
    assert out["stop_reason"] == "cost_budget" and calls == {"search": 2, "critic": 1}
    assert money_spent(out["cost"], context["prices"]) == pytest.approx(2 * 0.018 + 0.054)


def test_roles_and_prices_come_from_the_environment_as_json(monkeypatch):
    monkeypatch.setenv("CODEFOREST_ROLES", json.dumps({"critic": {"model": "small"}}))
    monkeypatch.setenv("CODEFOREST_PRICES", json.dumps({"gpt-4o-mini": [0.15, 0.6]}))
    context = Context()
    assert context.roles["critic"].model == "small" and context.prices == {"gpt-4o-mini": (0.15, 0.6)}
    monkeypatch.setenv("CODEFOREST_ROLES", json.dumps({"critc": {"model": "small"}}))
    with pytest.raises(ValueError, match="critc"):
        Context()
    monkeypatch.delenv("CODEFOREST_ROLES")
    with pytest.raises(ValueError, match="prices of m are negative"):
        Context(prices={"m": (0.1, -1.0), "n": (1.0, 2.0)})


def test_a_price_given_under_a_models_short_name_prices_its_calls(monkeypatch):
    """'small', an alias or a .gguf path in a price table (Python, Studio, the environment) prices the calls counted
    under the model's file name, as on the command line; two prices for one model are refused."""
    small, local = "qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b-instruct-q4_k_m"
    context = Context(prices={"small": (2.0, 4.0), "1.5B": (7.0, 7.0), "/models/Llama-3.1-8B.gguf": (1.0, 1.0)})
    assert context.prices == {small: (2.0, 4.0), local: (7.0, 7.0), "Llama-3.1-8B": (1.0, 1.0)}
    spent = {"prompt_tokens": 1_000_000, "completion_tokens": 1_000_000,
             "models": {small: {"prompt_tokens": 500_000, "completion_tokens": 500_000},
                        local: {"prompt_tokens": 500_000, "completion_tokens": 500_000}}}
    assert money_spent(spent, context.prices) == pytest.approx(1.0 + 2.0 + 3.5 + 3.5)  # not the default 0.5 and 1.5
    monkeypatch.setenv("CODEFOREST_PRICES", json.dumps({"fast": [3, 3]}))
    assert Context().prices == {small: (3.0, 3.0)}
    with pytest.raises(ValueError, match=f"two prices for {local}"):
        Context(prices={"local": (1.0, 1.0), local: (2.0, 2.0)})
    assert Context(prices={"local": (1.0, 1.0), local: (1.0, 1.0)}).prices == {local: (1.0, 1.0)}


def test_a_record_shows_each_roles_model_by_its_file_name_and_never_its_endpoint(tmp_path):
    from codeforest.bench import result_settings

    gguf = str(tmp_path / "private" / "Llama-3.1-8B.gguf")
    context = Context(roles={"critic": {"model": gguf, "temperature": 0.2},
                             "solver": {"model": "coder", "base_url": "http://user:secret@10.0.0.2/v1"}},
                      prices={gguf: (8.0, 8.0)})
    settings = result_settings(context)
    assert settings["roles"] == "critic=Llama-3.1-8B.gguf/temperature:0.2,solver=coder"
    assert settings["prices"] == {"Llama-3.1-8B": [8.0, 8.0]}
    shown = json.dumps(settings)
    assert str(tmp_path) not in shown and "private" not in shown and "secret" not in shown


def test_a_bench_on_two_models_replays_each_models_calls_from_its_own_cache_entries(endpoints, fixtures, tmp_path):
    """codetree writing on one endpoint and judging on the other: a rerun into another folder replays every call of
    both models from the response cache; with the critic renamed, only the critic's calls reach a model again."""
    from codeforest.bench import read_results
    from codeforest.cli import main

    first, second = endpoints
    cache = tmp_path / "responses.sqlite"

    def bench(out: str, critic: str) -> tuple[int, int, list[dict]]:
        before = (len(first.requests), len(second.requests))
        assert main(["bench", "--graph", "codetree", "--dataset", str(fixtures / "functions.jsonl"), "--limit", "2",
                     "--model", "search", "--base-url", first.url, "--role", f"critic={critic}@{second.url}",
                     "--cache", str(cache), "--out", str(tmp_path / out)]) == 0
        assert {r["model"] for r in first.requests[before[0]:]} <= {"search"}
        assert {r["model"] for r in second.requests[before[1]:]} <= {critic}
        return len(first.requests) - before[0], len(second.requests) - before[1], read_results(tmp_path / out)

    searched, judged, records = bench("first", "m-critic")
    assert searched and judged
    assert all(set(r["models"]) == {"search", "m-critic"} for r in records)
    again = bench("again", "m-critic")
    assert again[:2] == (0, 0)  # both models' calls replayed, and counted as before
    assert [r["models"] for r in again[2]] == [r["models"] for r in records]
    renamed = bench("renamed", "m-critic-2")
    assert renamed[:2] == (0, judged)  # the search model's calls replayed; the new critic's made again
    assert [r["final_code"] for r in renamed[2]] == [r["final_code"] for r in records]


def test_a_bench_of_several_graphs_gives_each_the_roles_it_calls_and_refuses_one_none_calls(tmp_path):
    """direct calls no Critic: beside codetree it runs without the entry, and its record does not name it; an entry
    no graph of the bench calls stops the bench before any problem, by name."""
    from codeforest.bench import Bench, read_results
    from codeforest.graphs.codetree import CodeTreeContext
    from codeforest.loading import load_dataset

    tasks = load_dataset("humaneval")[:1]
    with ScriptedEndpoint([], respond=any_role_reply) as api:
        critic = {"critic": {"model": "m-critic", "base_url": api.url}}
        context = CodeTreeContext(model="search", base_url=api.url, structured_output=False, codetree_max_programs=2,
                                  roles=critic)
        judged = CodeTreeContext.of(context, roles={**critic, "judge": {"model": "m-judge", "base_url": api.url}})
        with pytest.raises(ValueError, match="roles names judge, which this run never calls; the roles it calls: "
                                             "critic, debugger, solver, thinker$"):
            Bench(["direct", "codetree"], tasks, tmp_path, context=judged, dataset="humaneval")
        assert not api.requests
        Bench(["direct", "codetree"], tasks, tmp_path, context=context, dataset="humaneval").run()
    records = {r["graph"]: r for r in read_results(tmp_path)}
    assert records["direct"]["error"] is None and "roles" not in records["direct"]["settings"]
    assert records["codetree"]["error"] is None and records["codetree"]["settings"]["roles"] == "critic=m-critic"
    assert "m-critic" in records["codetree"]["models"] and set(records["direct"]["models"]) == {"search"}


def test_the_command_line_refuses_a_role_the_graph_never_calls_before_starting_a_model(capsys, monkeypatch):
    from codeforest.cli import main
    from codeforest.tools import models

    monkeypatch.setattr(models, "local_model_file", lambda *a, **k: pytest.fail("a model was looked for"))
    code = main(["solve", "--dataset", "humaneval", "--problem", "HumanEval/0", "--graph", "direct",
                 "--role", "critic=local"])
    assert code != 0
    assert "roles names critic, which this run never calls; the roles it calls: solver" in capsys.readouterr().err


def test_the_environments_roles_serve_every_graph_each_using_those_it_calls(endpoints, monkeypatch):
    """CODEFOREST_ROLES is a server's setting for every graph (langgraph dev): direct, which calls no Critic, runs
    beside it and its calls stay on the search model; the same entry given to direct's run is refused."""
    first, second = endpoints
    monkeypatch.setenv("CODEFOREST_ROLES", json.dumps({"critic": {"model": "m-critic", "base_url": second.url}}))
    before = len(second.requests)
    out = solve(PROBLEM, "direct", context={"model": "search", "base_url": first.url, "structured_output": False})
    assert out["error"] is None and set(out["cost"]["models"]) == {"search"} and len(second.requests) == before
    # the command line puts its --role entries over the environment's: each of those is still the environment's
    given = {"critic": {"model": "m-critic", "base_url": second.url}, "solver": {"model": "m-solver",
                                                                              "base_url": first.url}}
    out = solve(PROBLEM, "direct", context={"model": "search", "base_url": first.url, "structured_output": False,
                                            "roles": given})
    assert out["error"] is None and set(out["cost"]["models"]) == {"m-solver"}
    monkeypatch.delenv("CODEFOREST_ROLES")
    with pytest.raises(ValueError, match="roles names critic, which this run never calls"):
        solve(PROBLEM, "direct", context={"model": "search", "base_url": first.url,
                                          "roles": {"critic": {"model": "m-critic", "base_url": second.url}}})


def test_a_routed_roles_output_limit_fits_its_own_models_context():
    """The per-role output limits (2,048 tokens for text) come from the model a call goes to: a critic routed to
    an endpoint (window 0, its context unknown) gets the fixed 2,048 under a small embedded search model; routed to
    a 2,000-token server it gets what the prompt leaves; a role without a model of its own gets the search
    model's."""
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    from codeforest.agents.base import Route, _limited, acts_as, counting_calls, routing

    search, critic = (ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", model=name)
                      for name in ("search", "critic"))
    msgs = [HumanMessage("q" * 3000)]  # 3,000 // 3 + 64 = 1,064 tokens counted for the prompt

    def limit(role: str, critic_window: int | None) -> int | None:
        router = {"critic": Route(critic, frozenset(), critic_window)}.get
        with routing(router):
            return acts_as(role)(lambda: _limited(search, msgs, "text").max_tokens)()

    with counting_calls(window=2000):  # the search model: an embedded server of 2,000 tokens a slot
        assert limit("critic", 0) == 2048
        assert limit("critic", 16384) == 2048 and limit("critic", 1500) == 1500 - 1064
        assert limit("solver", 0) == 2000 - 1064


def test_the_command_line_finds_every_models_file_and_price_before_the_first_call(endpoints, capsys, tmp_path):
    """A critic's .gguf that is not there stops solve, and a cost budget over a model without a price stops bench,
    before any request and before a record is written."""
    from codeforest.cli import main

    first, _ = endpoints
    before = len(first.requests)
    search = ["--model", "search", "--base-url", first.url, "--dataset", "humaneval"]
    missing = tmp_path / "critic-1.5b.gguf"
    assert main(["solve", *search, "--problem", "HumanEval/0", "--graph", "codetree",
                 "--role", f"critic={missing}"]) != 0
    assert "critic-1.5b.gguf" in capsys.readouterr().err
    assert main(["bench", *search, "--graph", "resample", "--limit", "1", "--out", str(tmp_path / "run"),
                 "--cost-budget", "0.01"]) == 2
    assert "cost_budget needs a price for search" in capsys.readouterr().err
    assert len(first.requests) == before and not (tmp_path / "run").exists()


def test_the_command_line_gets_every_embedded_model_of_the_run_ready_with_its_slots(monkeypatch):
    """An endpoint writing code and the embedded 1.5B as its critic: the critic's file is looked for and its server
    gets the run's slots; a role entry the graph never calls (codetree asks no judge) is left alone, and a run on
    endpoints only starts no server."""
    from codeforest.cli.common import prepare_models
    from codeforest.tools import models

    looked = []
    monkeypatch.setattr(models, "local_model_file", lambda model, progress=None: looked.append(model))
    endpoint = {"model": "search", "base_url": "http://127.0.0.1:9/v1"}
    context = Context(**endpoint, roles={"critic": {"model": "local"}, "judge": {"model": "/no/such/judge.gguf"}})
    prepare_models(context, ["codetree"], slots=4)
    assert looked == ["local"] and context.role_context("critic").server_slots == 4
    remote = Context(**endpoint, roles={"critic": {"model": "c", "base_url": "http://127.0.0.1:9/v1"}})
    prepare_models(remote, ["codetree"], slots=4)
    assert looked == ["local"] and remote.server_slots == Context().server_slots
