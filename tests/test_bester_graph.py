"""BESTER driven by a scripted model: early stop, best-first choice, depth exhaustion, the exact call count."""

from __future__ import annotations

import threading

import pytest

from codeforest.graphs.bester import BesterContext, build_graph, choose
from codeforest.registry import graph_budget
from tests.fakes import RespondingChatModel

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6", "assert inc(-3) == -2"]}

# bodies of inc with 0, 1, 2 and 3 of the public tests passed
PASSES = {0: "x", 1: "2 if x == 1 else 0", 2: "x + 1 if x > 0 else x", 3: "x + 1"}


def code(body: str) -> str:
    return f"```python\ndef inc(x):\n    return {body}\n```"


class BesterScript:
    """Initial program, then per-seed reflections ("fix #<seed>") and repairs with chosen pass counts."""

    def __init__(self, initial: int, repairs: dict[int, int]):
        self.initial = initial
        self.repairs = repairs  # reflection seed -> tests the repair passes
        self.roles: list[str] = []
        self.prompts: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def __call__(self, messages, **kwargs):
        first = str(messages[0].content)
        if "experienced at identifying issues" in first:
            role, reply = "reflection", f"The solution is incorrect because of fix #{kwargs['seed']}."
        elif len(messages) == 1:
            role, reply = "initial", code(PASSES[self.initial])
        else:
            seed = int("\n".join(str(m.content) for m in messages).split("fix #")[1].split(".")[0])
            role, reply = "repair", code(PASSES[self.repairs[seed]])
        with self._lock:
            self.roles.append(role)
            self.prompts.setdefault(role, []).append("\n".join(str(m.content) for m in messages))
        return reply


def run(script: BesterScript, **settings):
    model = RespondingChatModel(respond=script, pass_kwargs=True)
    out = build_graph(model=model).invoke({"problem": PROBLEM}, context=BesterContext(**settings))
    return out, model


def test_a_passing_initial_program_costs_one_call():
    out, model = run(BesterScript(initial=3, repairs={}))
    assert out["stop_reason"] == "solved" and out["final_node"] == "n1" and out["public_pass_rate"] == 1.0
    assert len(model.calls) == 1 and out["cost"]["llm_calls"] == 1 and list(out["nodes"]) == ["n1"]


def test_stops_after_the_round_with_the_first_full_pass():
    script = BesterScript(initial=0, repairs={1: 0, 2: 2, 3: 3, 4: 3, 5: 1})
    out, model = run(script)
    assert out["stop_reason"] == "solved" and out["public_pass_rate"] == 1.0
    assert out["final_node"] == "n4" and out["nodes"]["n4"]["seed"] == 3  # the earliest of two full passes
    assert script.roles == ["initial"] + ["reflection"] * 5 + ["repair"] * 5  # no second round
    assert out["cost"]["llm_calls"] == 11 and out["cost"]["programs"] == 6 and out["cost"]["sandbox_runs"] == 6
    assert out["nodes"]["n4"]["status"] == "passed" and out["nodes"]["n1"]["status"] == "refined"


def test_best_first_choice_then_depth_exhaustion_in_exactly_21_calls():
    repairs = {1: 0, 2: 2, 3: 1, 4: 2, 5: 0,  # round 1: n3 (seed 2) and n5 tie at 2/3 -> n3, the earliest
               6: 1, 7: 0, 8: 1, 9: 0, 10: 0}  # round 2: all worse than n3
    script = BesterScript(initial=1, repairs=repairs)
    out, model = run(script)
    nodes = out["nodes"]
    assert len(model.calls) == 21 and out["cost"]["llm_calls"] == 21 and out["cost"]["programs"] == 11
    assert [n["parent"] for n in nodes.values()] == [None] + ["n1"] * 5 + ["n3"] * 5
    assert {n["depth"] for i, n in nodes.items() if n["parent"] == "n3"} == {3}
    assert out["stop_reason"] == "depth_exhausted"
    assert out["final_node"] == "n3" and out["public_pass_rate"] == pytest.approx(2 / 3)  # best over the search
    assert [nodes[i]["status"] for i in ("n1", "n3", "n5", "n7")] == ["refined", "refined", "failed", "failed"]
    # reflections are sampled at 0.8 with one seed each; the initial program and the repairs are greedy
    sampled = [kw for kw in model.call_kwargs if "seed" in kw]
    assert sorted(kw["seed"] for kw in sampled) == list(range(1, 11))
    assert {kw["temperature"] for kw in sampled} == {0.8}
    assert sum("temperature" not in kw for kw in model.call_kwargs) == 11
    # round 2 reflects on n3's program and shows only its failing test; repairs never see the tests
    round2 = script.prompts["reflection"][5:]
    assert all("x + 1 if x > 0 else x" in p and "assert inc(-3) == -2" in p for p in round2)
    assert not any("assert inc(1) == 2" in p for p in round2)
    assert not any("assert inc(" in p for p in script.prompts["repair"])
    assert all("Based on the feedback, correctly complete" in p for p in script.prompts["repair"])


def test_last_round_final_returns_the_paper_pseudocode_choice():
    repairs = {1: 0, 2: 2, 3: 1, 4: 2, 5: 0, 6: 1, 7: 0, 8: 1, 9: 0, 10: 0}
    out, _ = run(BesterScript(initial=1, repairs=repairs), bester_final="last_round")
    assert out["final_node"] == "n7" and out["public_pass_rate"] == pytest.approx(1 / 3)  # round 2's first 1/3


def test_random_selection_returns_its_own_last_choice():
    """Table 5's random selection would be hidden if the best program of the search were returned anyway."""
    repairs = {1: 0, 2: 2, 3: 1, 4: 2, 5: 0, 6: 1, 7: 0, 8: 1, 9: 0, 10: 0}
    chosen, _ = run(BesterScript(initial=1, repairs=repairs), bester_selection="random")
    best, _ = run(BesterScript(initial=1, repairs=repairs), bester_selection="random", bester_final="best")
    # 'best' ranks the programs the rounds kept: random picks never beat the initial 1/3 here
    assert best["final_node"] == "n1" and best["public_pass_rate"] == pytest.approx(1 / 3)
    assert chosen["final_node"] in {f"n{i}" for i in range(7, 12)}  # one of round 2's repairs
    assert chosen["final_node"] != best["final_node"]


def test_literal_loop_makes_one_repair_round():
    out, model = run(BesterScript(initial=0, repairs=dict.fromkeys(range(1, 6), 1)), bester_loop="literal")
    assert len(model.calls) == 11 and out["stop_reason"] == "depth_exhausted" and out["final_node"] == "n2"


def test_concurrency_builds_the_same_tree():
    repairs = {1: 0, 2: 2, 3: 1, 4: 2, 5: 0, 6: 1, 7: 0, 8: 3, 9: 0, 10: 3}
    serial, _ = run(BesterScript(initial=1, repairs=repairs))
    parallel, model = run(BesterScript(initial=1, repairs=repairs), bester_concurrency=5)
    assert parallel["final_node"] == serial["final_node"] == "n9" and parallel["stop_reason"] == "solved"
    assert _without_timing(parallel["nodes"]) == _without_timing(serial["nodes"]) and len(model.calls) == 21


def _without_timing(nodes: dict) -> dict:
    return {i: {**n, "execution": {k: v for k, v in n["execution"].items() if k != "wall_s"}}
            for i, n in nodes.items()}


def test_choose_rules():
    nodes = [{"id": f"n{i}", "order": i, "execution": {"passed": p, "total": 3}} for i, p in enumerate([1, 2, 2, 0])]
    assert choose(nodes, "most_tests", "P", 1)["id"] == "n1"
    picks = {choose(nodes, "random", "P", r)["id"] for r in range(20)}
    assert len(picks) > 1 and picks <= {n["id"] for n in nodes}
    assert choose(nodes, "random", "P", 3) == choose(list(reversed(nodes)), "random", "P", 3)  # reproducible
    with pytest.raises(ValueError, match="bester_selection"):
        choose(nodes, "fewest_tests", "P", 1)


def test_table5_selection_rules():
    before = "def inc(x):\n    y = x\n    return y"
    repairs = [{"id": "a", "order": 1, "text": "The loop is wrong.",
                "code": "def inc(x):\n    y = x\n    return y + 1"},
               {"id": "b", "order": 2, "text": "Use `y + 1` instead.", "code": "def inc(x):\n    return x + 1"},
               {"id": "c", "order": 3, "text": "It forgets one.\n    return x + 1", "code": before}]
    for node in repairs:
        node["execution"] = {"passed": 0, "total": 1}
    assert choose(repairs, "code", "P", 1, before)["id"] == "b"  # the first reflection showing code
    # changed lines against the program reflected on: a 2 (one out, one in), b 3 (two out, one in), c 0
    assert choose(repairs, "min_diff", "P", 1, before)["id"] == "c"
    assert choose(repairs, "max_diff", "P", 1, before)["id"] == "b"
    assert choose(repairs[:1], "code", "P", 1, before)["id"] == "a"  # no reflection shows code: the first


def test_ex_feedback_repairs_from_the_failing_tests_without_reflections():
    """The paper's Ex. Feedback baseline: k sampled repairs (a seed each) shown the failing tests, no reflection."""
    repairs = {1: 1, 2: 2, 3: 0, 4: 3}  # seed -> tests passed; round 1 keeps seed 2, round 2 passes with seed 4
    prompts: list[str] = []

    def respond(messages, **kwargs):
        prompts.append("\n".join(str(m.content) for m in messages))
        assert "experienced at identifying issues" not in prompts[-1], "no self-reflection is asked for"
        return code(PASSES[1 if len(messages) == 1 else repairs[kwargs["seed"]]])

    model = RespondingChatModel(respond=respond, pass_kwargs=True)
    out = build_graph(model=model).invoke({"problem": PROBLEM}, context=BesterContext(
        bester_feedback="execution", bester_width=2))
    assert len(model.calls) == 5 and out["stop_reason"] == "solved" and out["final_node"] == "n5"
    assert [kw.get("seed") for kw in model.call_kwargs] == [None, 1, 2, 3, 4]
    assert {kw["temperature"] for kw in model.call_kwargs[1:]} == {0.8}
    # round 1 repairs the initial program (1 of 3 passed) from its two failing tests, round 2 the kept n3
    assert "It failed the following test cases\nassert inc(5) == 6" in prompts[1]
    assert "assert inc(-3) == -2" in prompts[3] and "assert inc(5) == 6" not in prompts[3]
    assert out["nodes"]["n4"]["parent"] == "n3" and out["nodes"]["n2"]["text"].startswith("The solution is incorrect.")
    assert graph_budget("bester", BesterContext(bester_feedback="execution"))["limit"] == 11


def test_budget_in_calls():
    assert graph_budget("bester", BesterContext()) == {"unit": "llm_calls", "limit": 21}
    assert graph_budget("bester", BesterContext(bester_loop="literal"))["limit"] == 11
    assert graph_budget("bester", BesterContext(bester_depth=3, bester_width=2))["limit"] == 13
    with pytest.raises(ValueError, match="bester_loop"):
        graph_budget("bester", BesterContext(bester_loop="forever"))


def test_reflexion_is_bester_with_one_greedy_reflection_per_round():
    from codeforest.graphs import reflexion

    script = BesterScript(initial=1, repairs={seed: 2 if seed == 3 else 0 for seed in range(1, 20)})
    model = RespondingChatModel(respond=script, pass_kwargs=True)
    out = reflexion.build_graph(model=model).invoke({"problem": PROBLEM})  # no context: Reflexion's defaults
    assert script.roles == ["initial"] + ["reflection", "repair"] * 19 and out["cost"]["programs"] == 20
    assert {kw.get("temperature") for kw in model.call_kwargs if "seed" in kw} == {0.0}
    # every round repairs the previous repair (k = 1 keeps it); none passes: the last attempt is returned
    assert out["final_node"] == "n20" and out["public_pass_rate"] == 0.0  # n4 (2 of 3) is not returned
    assert graph_budget("reflexion") == {"unit": "programs", "limit": 20}
    # Reflexion's repair shows the failing tests beside the reflection; BESTER's only the reflection
    repair = script.prompts["repair"][0]
    assert "[unit test results from previous implement]:" in repair and out["nodes"]["n1"]["feedback"] in repair
    bester_script = BesterScript(initial=1, repairs={seed: 0 for seed in range(1, 6)})
    run(bester_script, bester_depth=1)
    assert "[unit test results" not in bester_script.prompts["repair"][0]
    assert out["nodes"]["n1"]["feedback"] not in bester_script.prompts["repair"][0]
