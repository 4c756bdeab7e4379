"""One budget unit for every graph: no model call starts once ``token_budget`` tokens are spent."""

from __future__ import annotations

import math

import pytest

from codeforest.registry import graph_names
from tests.fakes import RespondingChatModel
from tests.test_native import INC, Universal, run

CALL_TOKENS = 15  # every scripted call: 10 prompt + 5 completion tokens


@pytest.mark.parametrize("budget", [40, 100])
@pytest.mark.parametrize("graph", [g for g in graph_names() if g != "direct"])
def test_every_graph_stops_at_the_token_budget_with_its_best_program(graph, budget):
    model = RespondingChatModel(respond=Universal(wrong=True))
    out = run(graph, INC, model=model, token_budget=budget)
    spent = out["cost"]["prompt_tokens"] + out["cost"]["completion_tokens"]
    assert out["stop_reason"] == "token_budget" and out["error"] is None
    # the call that crossed the budget was the last one made: 40 -> 3 calls, 100 -> 7 calls
    assert len(model.calls) == out["cost"]["llm_calls"] == math.ceil(budget / CALL_TOKENS)
    assert spent - CALL_TOKENS < budget <= spent
    if out["cost"]["programs"]:
        assert out["final_code"] and out["final_node"] in out["nodes"]


@pytest.mark.parametrize("budget", [0.05, 0.09])
@pytest.mark.parametrize("graph", [g for g in graph_names() if g != "direct"])
def test_every_graph_stops_at_the_cost_budget_with_its_best_program(graph, budget):
    """At 1,000 per million prompt tokens and 2,000 per million completion tokens a scripted call costs
    10 * 0.001 + 5 * 0.002 = 0.02: a call starts while less than the budget is spent, so 0.05 lets 3 calls start
    and 0.09 lets 5."""
    model = RespondingChatModel(respond=Universal(wrong=True))
    out = run(graph, INC, model=model, cost_budget=budget, prices={"RespondingChatModel": (1000.0, 2000.0)})
    assert out["stop_reason"] == "cost_budget" and out["error"] is None
    assert len(model.calls) == out["cost"]["llm_calls"] == {0.05: 3, 0.09: 5}[budget]
    if out["cost"]["programs"]:
        assert out["final_code"] and out["final_node"] in out["nodes"]


def test_a_budget_the_search_does_not_reach_changes_nothing():
    plain = run("codetree", INC, model=RespondingChatModel(respond=Universal()))
    budgeted = run("codetree", INC, model=RespondingChatModel(respond=Universal()), token_budget=10_000)
    assert budgeted["stop_reason"] == plain["stop_reason"] != "token_budget"
    assert budgeted["final_code"] == plain["final_code"] and budgeted["cost"] == plain["cost"]


@pytest.mark.parametrize(("graph", "settings"), [(g, {}) for g in graph_names() if g != "direct"]
                         + [("gvr", {"gvr_reward": "pub_prm"})])  # the Verifier values a passing program
def test_a_program_written_before_the_budget_ran_out_is_kept(graph, settings):
    """A later call of the same step (self-evaluation, Verifier, evaluator, the next chain's code) refused for
    the budget must not throw away a program already written and run: the search ends with it."""
    universal, written = Universal(), []

    def respond(messages):
        reply = universal(messages)
        written.extend([reply] if reply.startswith("```python") else [])
        return reply

    for calls in range(1, 13):
        written.clear()
        out = run(graph, INC, model=RespondingChatModel(respond=respond), token_budget=CALL_TOKENS * calls,
                  **settings)
        assert out["cost"]["programs"] == len(written), (calls, out["cost"])
        if written:
            assert out["final_code"] and out["final_node"] in out["nodes"], calls
            assert out["nodes"][out["final_node"]].get("execution"), calls


def test_codetree_returns_a_visible_pass_the_budget_kept_from_its_critic():
    """The budget refuses the Critic's call on a program passing 4/4: that program, not the scored 3/4 failure
    (value 0.75 + 4/15, above the unscored pass's 1.0), is returned."""
    from codeforest.registry import build_graph, context_for
    from tests.fakes import code_reply

    problem = {"id": "T/f", "prompt": 'def f(x):\n    """Return x plus one."""\n', "kind": "function",
               "entry_point": "f", "public_tests": [f"assert f({i}) == {i + 1}" for i in range(1, 5)]}
    wrong, right = "def f(x):\n    return 0 if x == 4 else x + 1", "def f(x):\n    return x + 1"

    def respond(messages):
        text = "\n".join(str(m.content) for m in messages)
        if "strategies" in text and "Python programmers" in text:
            return "1. Add one to the input x and return it."
        if "Score from 0 to 5" in text:
            return "Only the last case is wrong.\n4"
        if "Reflect on the implementation" in text:
            return "1. Do not special-case four; just add one."
        if "code reviewer" in text:
            return "Fine.\nTrue"
        return code_reply(right if "special-case" in text else wrong)

    for budget, stop in ((0, "accepted"), (75, "token_budget")):
        ctx = context_for("codetree", structured_output=False, token_budget=budget)
        out = build_graph("codetree", model=RespondingChatModel(respond=respond)).invoke({"problem": problem},
                                                                                          context=ctx)
        assert out["stop_reason"] == stop and out["final_code"] == right and out["public_pass_rate"] == 1.0
