"""Best-of-N GVR driven by a scripted model: sampled chains, code, verifier reward, refine of failing chains."""

from __future__ import annotations

import random

import pytest

from codeforest.graphs.gvr_bon import GvrBonContext, build_graph, chain_value
from tests.fakes import RespondingChatModel

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}


class Chains:
    """Steps by seed, code by the chain's last thought, verifier scores by the code."""

    def __init__(self, scores):
        self.scores, self.calls = dict(scores), []

    def __call__(self, messages, **kwargs):
        text = "\n".join(str(m.content) for m in messages)
        if "offer ONE more further thought step" in text:
            self.calls.append(("step", kwargs.get("temperature"), kwargs.get("seed")))
            return {1: "A1 first.", 2: "B1 first.", 3: "A2 add two.", 4: "B2 add one."}[kwargs["seed"]]
        if "judge the correctness of each thought" in text:
            code = text.split("def inc(x):\n    return ")[-1].split("\n")[0]
            self.calls.append(("verify", code))
            return self.scores[code].pop(0)
        if "find which thought is flawed" in text:
            self.calls.append(("locate",))
            return '{"problematic id": 1, "explanation": "the first step is wrong"}'
        if "Revise and enhance the" in text:
            self.calls.append(("refine", text.split("Revise and enhance the ")[1].split(" ")[0]))
            return "Thought: add one."
        self.calls.append(("code",))
        last = text.rstrip().splitlines()[-1]
        return "```python\ndef inc(x):\n    return " + ("x + 2" if "add two" in last else "x + 1") + "\n```"


def run(model, **settings):
    context = GvrBonContext(structured_output=False, gvr_bon_n=2, gvr_bon_steps=2, **settings)
    return build_graph(model=model).invoke({"problem": PROBLEM}, context=context)


def drawn_scores(key: str, count: int = 2) -> list[float]:
    """The scores an unreadable Verifier reply flags from: one seeded draw per thought."""
    drawn = random.Random(key)
    return [drawn.random() for _ in range(count)]


def test_best_of_n_by_verifier_reward_with_refine_of_the_failing_chain():
    chains = Chains({"x + 2": ['{"1-Thought": 0.9, "2-Thought": 0.3}'],
                     "x + 1": ['{"1-Thought": 0.6, "2-Thought": 0.7}', '{"1-Thought": 0.8, "2-Thought": 0.95}']})
    out = run(RespondingChatModel(respond=chains, pass_kwargs=True))
    assert chains.calls[:4] == [("step", 0.7, 1), ("step", 0.7, 2), ("step", 0.7, 3), ("step", 0.7, 4)]
    # code A fails and B passes; both are scored; A's scores are reused to flag its 2nd thought (0.3 < 0.5)
    assert chains.calls[4:] == [("code",), ("code",), ("verify", "x + 2"), ("verify", "x + 1"),
                                ("refine", "2-Thought"), ("code",), ("verify", "x + 1")]
    nodes = out["nodes"]
    assert [nodes[i]["parent"] for i in ("n3", "n4")] == ["n1", "n2"]
    assert nodes["n3"]["text"] == "add one." and nodes["n3"]["replaced_thought"] == "A2 add two."
    assert nodes["n3"]["value"] == 0.95 and nodes["n4"]["value"] == 0.7  # max of the step scores
    # the refined chain's code was scored again; the scores of its first code stay in prm_history
    assert nodes["n3"]["prm_scores"] == [0.8, 0.95] and nodes["n3"]["prm_history"] == [[0.9, 0.3]]
    assert nodes["n4"]["prm_scores"] == [0.6, 0.7] and "prm_history" not in nodes["n4"]
    assert out["final_node"] == "n3" and out["final_code"].endswith("x + 1")
    assert out["cost"]["programs"] == 3 and out["stop_reason"] == "budget_exhausted"


def test_an_unreadable_reward_reply_is_reused_and_flags_from_drawn_scores():
    chains = Chains({"x + 2": ["No idea."], "x + 1": ['{"1-Thought": 0.6, "2-Thought": 0.7}'] * 2})
    out = run(RespondingChatModel(respond=chains, pass_kwargs=True), verifier_threshold=0.2)  # 0.5s flag nothing
    draws = drawn_scores("T/inc:n3:0")  # the released code's random scores
    flagged = [i + 1 for i, s in enumerate(draws) if s <= 0.2]
    assert [c[1] for c in chains.calls if c[0] == "refine"] == [f"{i}-Thought" for i in flagged] == ["2-Thought"]
    assert chains.calls.count(("verify", "x + 2")) == 1 and out["cost"]["parse_failures"] == 1


@pytest.mark.parametrize("unread, value", [("half", 0.5), ("random", max(drawn_scores("T/inc:n4:0:value")))])
def test_an_unreadable_reward_reply_values_the_chain_by_half_or_by_the_released_draw(unread, value):
    """The chain ending n4 writes x + 1 and its Verifier reply is unreadable: each thought scores 0.5, or (the
    released code) a uniform draw seeded by the problem, chain and round; the chain is worth the max."""
    chains = Chains({"x + 2": ['{"1-Thought": 0.9, "2-Thought": 0.3}'], "x + 1": ["No idea."]})
    out = run(RespondingChatModel(respond=chains, pass_kwargs=True), gvr_bon_max_refines=0, verifier_unread=unread)
    assert out["nodes"]["n4"]["value"] == pytest.approx(value) and out["nodes"]["n3"]["value"] == 0.9
    assert out["final_node"] == ("n4" if value > 0.9 else "n3")


def test_a_second_round_flags_an_unread_chain_from_fresh_draws_not_from_its_fallback_scores():
    """Under pub_test the Verifier first runs in the verify node; chain B's unreadable reply flags nothing in
    round 0 and its code stays, so round 1 reuses that reply: still unread (fresh draws), not 0.5 everywhere
    (which θ = 0.5 would flag whole)."""
    class BothFail(Chains):
        def __call__(self, messages, **kwargs):
            if kwargs.get("seed") == 4 and "offer ONE more further thought step" in str(messages[-1].content):
                return "B2 add two."
            return super().__call__(messages, **kwargs)

    draws = {key: drawn_scores(f"T/e:{key}") for key in ("n3:0", "n4:0", "n4:1")}
    assert min(draws["n4:0"]) > 0.5 and max(draws["n4:1"]) > 0.5  # round 0 leaves B alone; round 1 not all
    chains = BothFail({"x + 2": ["No idea."] * 3})
    context = GvrBonContext(structured_output=False, gvr_bon_n=2, gvr_bon_steps=2, gvr_bon_reward="pub_test",
                            gvr_bon_max_refines=2)
    out = build_graph(model=RespondingChatModel(respond=chains, pass_kwargs=True)).invoke(
        {"problem": {**PROBLEM, "id": "T/e"}}, context=context)
    # A's refined code passes and is never scored: its unread mark went with the scores of its first code
    assert out["nodes"]["n3"]["prm_history"] == [[0.5, 0.5]] and not out["nodes"]["n3"]["prm_unread"]
    expected = [f"{i + 1}-Thought" for key in ("n3:0", "n4:1") for i, s in enumerate(draws[key]) if s <= 0.5]
    assert [c[1] for c in chains.calls if c[0] == "refine"] == expected
    assert chains.calls.count(("verify", "x + 2")) == 2  # A and B once each: B's reply is reused


@pytest.mark.parametrize("unflagged", ["none", "lowest"])
def test_a_failing_chain_with_nothing_flagged_keeps_its_code_unless_the_released_fallback(unflagged):
    """The failing chain scores above θ everywhere: the paper refines nothing and the search ends; the released
    fallback refines its lowest thought (0.6, the first) and writes its code again (from the unchanged last
    thought: the same code)."""
    chains = Chains({"x + 2": ['{"1-Thought": 0.6, "2-Thought": 0.7}'] * 2,
                     "x + 1": ['{"1-Thought": 0.6, "2-Thought": 0.9}']})
    out = run(RespondingChatModel(respond=chains, pass_kwargs=True), verifier_unflagged=unflagged)
    refined = [c[1] for c in chains.calls if c[0] == "refine"]
    assert refined == ([] if unflagged == "none" else ["1-Thought"])
    assert out["cost"]["programs"] == (2 if unflagged == "none" else 3)
    assert out["final_code"].endswith("x + 1")


def test_each_refinement_sees_the_thoughts_rewritten_before_it():
    class Shown(Chains):
        def __call__(self, messages, **kwargs):
            text = "\n".join(str(m.content) for m in messages)
            if "Revise and enhance the" in text:
                self.refine_prompts = [*getattr(self, "refine_prompts", []), text]
            return super().__call__(messages, **kwargs)

    chains = Shown({"x + 2": ['{"1-Thought": 0.1, "2-Thought": 0.3}'],
                    "x + 1": ['{"1-Thought": 0.6, "2-Thought": 0.7}', '{"1-Thought": 0.8, "2-Thought": 0.95}']})
    run(RespondingChatModel(respond=chains, pass_kwargs=True))
    first, second = chains.refine_prompts
    assert "\n1-Thought: A1 first.\n2-Thought: A2 add two." in first
    assert "\n1-Thought: add one.\n2-Thought: A2 add two." in second and "Revise and enhance the 2-Thought" in second


def test_llm_locate_flags_the_named_thought_and_keeps_the_reward_scores():
    chains = Chains({"x + 2": ['{"1-Thought": 0.9, "2-Thought": 0.3}', '{"1-Thought": 0.5, "2-Thought": 0.4}'],
                     "x + 1": ['{"1-Thought": 0.6, "2-Thought": 0.7}']})
    out = run(RespondingChatModel(respond=chains, pass_kwargs=True), gvr_bon_verify="llm_locate")
    # the scores value the chains; the locator, not the lowest score (the 2nd), picks the thought to refine
    assert chains.calls[8:] == [("locate",), ("refine", "1-Thought"), ("code",), ("verify", "x + 2")]
    assert out["nodes"]["n1"]["replaced_thought"] == "A1 first." and out["nodes"]["n3"]["value"] == 0.5
    assert out["final_node"] == "n4"


def test_before_refinement_the_higher_verifier_reward_would_have_won():
    chains = Chains({"x + 2": ['{"1-Thought": 0.9, "2-Thought": 0.3}'],
                     "x + 1": ['{"1-Thought": 0.6, "2-Thought": 0.7}']})
    out = run(RespondingChatModel(respond=chains, pass_kwargs=True), gvr_bon_max_refines=0)
    assert out["final_node"] == "n3" and out["final_code"].endswith("x + 2")  # PRM 0.9 beats 0.7, tests aside
    assert out["public_pass_rate"] == 0.0


def test_pub_test_reward_needs_no_verifier_for_passing_code():
    chains = Chains({"x + 2": ['{"1-Thought": 0.9, "2-Thought": 0.3}'], "x + 1": []})
    out = run(RespondingChatModel(respond=chains, pass_kwargs=True), gvr_bon_reward="pub_test",
              gvr_bon_max_refines=0)
    assert ("verify", "x + 1") not in chains.calls and out["final_node"] == "n4"


def test_chain_value_rules():
    assert chain_value(0.5, True, 0.9, "prm") == 0.9
    assert chain_value(0.5, True, 0.9, "pub_prm") == 0.5 and chain_value(1.0, True, 0.9, "pub_prm") == 1.9
    assert chain_value(1.0, True, None, "pub_test") == 1.0
    assert chain_value(0.0, False, 0.4, "pub_test") == pytest.approx(0.4)


def test_equal_chain_values_go_to_the_earliest_chain():
    class BothPass(Chains):
        def __call__(self, messages, **kwargs):
            if kwargs.get("seed") == 3 and "offer ONE more further thought step" in str(messages[-1].content):
                return "A2 add one."
            return super().__call__(messages, **kwargs)

    chains = BothPass({"x + 1": ['{"1-Thought": 0.6, "2-Thought": 0.8}'] * 2})
    out = run(RespondingChatModel(respond=chains, pass_kwargs=True))
    assert [out["nodes"][i]["value"] for i in ("n3", "n4")] == [0.8, 0.8]
    assert out["final_node"] == "n3"


@pytest.mark.parametrize(("settings", "refined"), [
    ({}, ["1-Thought", "2-Thought"]),  # θ 0.5 flags 0.4 and 0.3
    ({"verifier_threshold": 0.35}, ["2-Thought"]),
    ({"verifier_threshold": 0.2}, []),
    ({"verifier_threshold": 0.3, "verifier_threshold_rule": "lt"}, []),  # the repo's strict <
    ({"verifier_threshold": 0.3, "verifier_threshold_rule": "le"}, ["2-Thought"]),
    ({"gvr_bon_verify": "locate_min"}, ["2-Thought"]),  # only the lowest, though θ flags both
    ({"gvr_bon_verify": "locate_min", "verifier_threshold": 0.2}, ["2-Thought"]),  # the lowest, even above θ
])
def test_best_of_n_flags_by_threshold_rule_and_locate_min(settings, refined):
    chains = Chains({"x + 2": ['{"1-Thought": 0.4, "2-Thought": 0.3}'],
                     "x + 1": ['{"1-Thought": 0.6, "2-Thought": 0.7}'] * 2})
    run(RespondingChatModel(respond=chains, pass_kwargs=True), **settings)
    assert [c[1] for c in chains.calls if c[0] == "refine"] == refined
