"""GVR-MCTS driven by a scripted model: verify -> refine -> regenerate, threshold and locate-min, values, final."""

from __future__ import annotations

import random

import pytest

from codeforest.agents.verifier import parse_location
from codeforest.graphs.codeprm import aggregate, flag_thoughts
from codeforest.graphs.gvr import GvrContext, best_program, build_graph, value_of
from tests.fakes import RespondingChatModel, RoleScript, thought_list

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}
ROLES = [("find which thought is flawed", "locate"), ("Revise and enhance the", "refine"),
         ("judge the correctness of each thought", "verify"),
         ("doesn't pass some test cases", "expand_fb"), ("Reasonableness", "expand"),
         ("Complete the Python program", "solver")]


def Script(**replies):  # noqa: N802 (reads as the class it builds)
    return RoleScript(ROLES, **replies)


thoughts = thought_list


def code(body):
    return f"```python\ndef inc(x):\n    return {body}\n```"


def run(script, **settings):
    """Run the scripted search; the scripts of Verify-Refine on failing code leave passing code unverified
    (pub_test) unless a test sets the reward."""
    context = GvrContext(structured_output=False, gvr_width=2, **{"gvr_reward": "pub_test", **settings})
    return build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": PROBLEM}, context=context)


def two_rollouts(second_scores='1-Thought: 0.5, 2-Thought: 0.1', refines=("Thought: Return x plus one.",
                                                                         "Return two."), locate=()):
    return Script(
        locate=list(locate),
        expand=[thoughts(("Return x + 2.", 0.6), ("Return x + 1.", 0.4)),
                thoughts(("Keep it.", 0.5), ("Check types.", 0.5))],
        expand_fb=[thoughts(("Handle every x.", 0.5), ("Add one to any x.", 0.5))],
        solver=[code("x + 2"), code("x + 1"), code("0"), code("2")] + [code("2")],
        verify=['```json\n{"1-Thought": 0.2}\n```', second_scores],
        refine=list(refines) + ["Return the number two."],
    )


def test_verify_refine_regenerate_with_exact_prompts():
    script = two_rollouts()
    out = run(script, gvr_rollouts=2, verifier_threshold_rule="lt")
    # rollout 1: n1 fails, is verified, refined, passes, expanded; rollout 2 (root N=2: n1 = 1 + β(2)·0.6·√ln 2/2
    # = 2.065 > n2 = β(2)·0.4·√ln 2 = 1.420) goes to n1's first child n3, which fails, is refined and still fails
    assert script.roles == ["expand", "solver", "verify", "refine", "solver", "expand",
                            "solver", "verify", "refine", "solver", "expand_fb"]
    nodes = out["nodes"]
    refine_prompt = script.prompts["refine"][0]
    assert refine_prompt == (
        "You are an expert programmer.\n"
        f"{PROBLEM['prompt']}\nThoughts:\n\n1-Thought: Return x + 2.\ndef inc(x):\n    return x + 2\n"
        "## Failed test 1: \n\nassert inc(1) == 2\n\n# Current Execution Output:\n3\n\n"
        "## Failed test 2: \n\nassert inc(5) == 6\n\n# Current Execution Output:\n7\n"
        "Above is the combination of problem, thoughts and code. \n"
        "Each thought is bounded with an id number at the beginning of the thought.\n"
        "* Revise and enhance the 1-Thought above in the thoughts by providing a improved new thought to replace "
        "it.\n* Remember that you only need to provide the new thought in one or two sentences, not the code.")
    assert script.prompts["verify"][0] == (  # the released llm_score_thought: no "Thoughts:" line, unlike refine
        "You are an expert programmer.\n"
        f"{PROBLEM['prompt']}\n1-Thought: Return x + 2.\ndef inc(x):\n    return x + 2\n"
        "## Failed test 1: \n\nassert inc(1) == 2\n\n# Current Execution Output:\n3\n\n"
        "## Failed test 2: \n\nassert inc(5) == 6\n\n# Current Execution Output:\n7\n"
        "Above is the combination of problem, thoughts and corresponding code and feedback.\n"
        "Each thought is bounded with an id number at the beginning of the thought.\n\n"
        "* Please analysis and judge the correctness of each thought.\n"
        "* Return the correctness scores in range [0, 1].\n"
        "* Evaluate the correctness of EACH thought and give all the evaluation scores.\n"
        "* Please wrap your response into a JSON object in ```json ... ```, which contains keys `i-Thought` with i "
        "as the number of your thought, and value is between 0~1 as the score of the thought.\n"
        "* The JSON should be a **dict**, the dict items are split with comma ','.\n"
        "* The score should be between 0-1. For example,\n"
        "    score 0.1 means the thought provides a wrong strategy or algorithm for the problem that would lead to "
        "the wrong code.\n"
        "    score 0.3 means the thought is erroneous for not paying attention to the dict writing problem.\n"
        "    score 0.8 means the thought is correct but miss some tip for implementation.\n"
        "    score 1.0 means the thought is totally correct.\n"
        "* Reply with the JSON object only, with no other words or explanation attached.\n\n"
        'Example Answer:\n```json\n{\n    "1-Thought": 0.3,\n    "2-Thought": 0.8,\n    "3-Thought": 1.0,\n}\n```')
    verify_prompt = script.prompts["verify"][1]
    assert "\n1-Thought: Return x plus one.\n2-Thought: Keep it.\ndef inc(x):\n    return 0\n## Failed test 1:" \
        in verify_prompt
    assert nodes["n1"]["text"] == "Return x plus one." and nodes["n1"]["replaced_thought"] == "Return x + 2."
    # the scores belonged to the code before the refinement: kept in prm_history, not on the new passing code
    assert nodes["n1"]["refined"] == 1 and nodes["n1"]["value"] == 1.0
    assert nodes["n1"]["prm_scores"] is None and nodes["n1"]["prm_history"] == [[0.2]]
    # "1-Thought: 0.5, 2-Thought: 0.1": every second number; only 0.1 is below θ = 0.5 (the released strict <)
    assert nodes["n3"]["prm_history"] == [[0.5, 0.1]] and nodes["n3"]["text"] == "Return two."
    assert "Revise and enhance the 2-Thought" in script.prompts["refine"][1]
    assert nodes["n3"]["value"] == 0.5 and nodes["n3"]["code"].endswith("return 2")
    fb = script.prompts["expand_fb"][0]
    generator = "You are a helpful code generator that generate code to complete the given problem.\n"
    assert all(script.prompts[role][0].startswith(generator) for role in ("expand", "expand_fb", "solver"))
    assert "def inc(x):\n    return 2\nAbove is the combination of problem" in fb
    # the paper's T4 has "Above is a problem..." before the instructions (the released code has no such line)
    assert f"{PROBLEM['prompt']}\nAbove is a problem to be solved by Python program.\n* I need you to analyze" \
        in script.prompts["expand"][0]
    assert "## Failed test 1: \n\nassert inc(5) == 6" in fb and "\nThought: Return two." in fb
    assert (nodes["n1"]["visits"], nodes["root"]["visits"]) == (3, 3)
    assert nodes["n1"]["q"] == 1.0 and nodes["n3"]["q"] == 0.5
    assert out["final_node"] == "n1" and out["final_code"].endswith("return x + 1")
    assert out["stop_reason"] == "budget_exhausted" and out["public_pass_rate"] == 1.0
    assert out["cost"]["programs"] == 4 and out["cost"]["llm_calls"] == 11


@pytest.mark.parametrize("settings, refined", [
    ({}, ["1-Thought", "2-Thought"]),  # the paper's θ = 0.5 with ≤: 0.5 too, one after another
    ({"verifier_threshold_rule": "lt"}, ["2-Thought"]),  # the released code's strict <: only 0.1
    ({"gvr_verify": "locate_min"}, ["2-Thought"]),
])
def test_threshold_rules_and_locate_min_choose_the_refined_thoughts(settings, refined):
    script = two_rollouts(refines=("Return x plus one.", "Add one.", "Return x plus one, always."))
    out = run(script, gvr_rollouts=2, **settings)
    asked = [p.split("Revise and enhance the ")[1].split(" ")[0] for p in script.prompts["refine"][1:]]
    assert asked == refined
    if len(refined) == 2:  # both refine prompts show the same thoughts and code (the released order)
        first, second = script.prompts["refine"][1:]
        assert first.split("Above is")[0] == second.split("Above is")[0]
        assert out["nodes"]["n1"]["text"] == "Add one." and out["nodes"]["n3"]["text"] == "Return x plus one, always."


def test_llm_locate_refines_the_thought_the_model_names_without_scores():
    script = two_rollouts(refines=("Return x plus one.", "Add one."),
                          locate=['{"problematic id": 1,  "explanation": "x + 2 adds two."}', "I cannot tell."])
    out = run(script, gvr_rollouts=2, gvr_verify="llm_locate")
    assert "verify" not in script.roles and script.roles.count("locate") == 2
    assert script.prompts["locate"][0] == (
        "You are an expert programmer.\n"
        "Below is the combination of problem, thoughts, code and execution feedback.\n"
        "Each thought is bounded with an id number at the beginning of the thought.\n"
        "* Please analysis and find which thought is flawed that lead to the wrong code.\n"
        "* Remember that you only need to find the wrong thought, not the code.\n"
        "* Please notice that you should analysis the thoughts, not the execution analysis which also have ids.\n"
        "Example Answers:\n"
        '{"problematic id": 2,  "explanation": "[Your explanation of why the second thought is wrong]"}\n'
        '{"problematic id": 1,  "explanation": "[Your explanation of why the first thought is wrong]"}\n'
        '{"problematic id": 3,  "explanation": "[Your explanation of why the third thought is wrong]"}\n\n'
        "Here are the thoughts and code:\n"
        f"{PROBLEM['prompt']}\nThoughts:\n\n1-Thought: Return x + 2.\ndef inc(x):\n    return x + 2\n"
        "## Failed test 1: \n\nassert inc(1) == 2\n\n# Current Execution Output:\n3\n\n"
        "## Failed test 2: \n\nassert inc(5) == 6\n\n# Current Execution Output:\n7\n\n"
        "Begin your response:")
    nodes = out["nodes"]
    assert nodes["n1"]["replaced_thought"] == "Return x + 2." and nodes["n1"].get("prm_scores") is None
    assert "prm_history" not in nodes["n1"]  # the locator gives no scores
    # the second answer names no thought: the last one on the path (n3, the 2nd) is refined, and it is counted
    assert "Revise and enhance the 2-Thought" in script.prompts["refine"][1] and nodes["n3"]["text"] == "Add one."
    assert out["cost"]["parse_failures"] == 1


@pytest.mark.parametrize("mode", ["last", "random"])
def test_score_free_locators_call_no_model(mode):
    script = two_rollouts(refines=("Return x plus one.", "Add one."))
    out = run(script, gvr_rollouts=2, gvr_verify=mode)
    assert "verify" not in script.roles and "locate" not in script.roles
    asked = [p.split("Revise and enhance the ")[1].split(" ")[0] for p in script.prompts["refine"]]
    assert asked[0] == "1-Thought" and asked[1] in ("1-Thought", "2-Thought")  # a one-thought path, then two
    if mode == "last":
        assert asked[1] == "2-Thought"
    else:  # drawn from the problem, node and round: a rerun refines the same thought
        again = two_rollouts(refines=("Return x plus one.", "Add one."))
        run(again, gvr_rollouts=2, gvr_verify=mode)
        assert again.prompts["refine"] == script.prompts["refine"]
    assert out["cost"].get("parse_failures", 0) == 0


@pytest.mark.parametrize("unflagged, refined", [("none", False), ("lowest", True)])
def test_nothing_flagged_keeps_the_code_unless_the_released_fallback_refines_the_lowest(unflagged, refined):
    """Every score above θ: the paper refines nothing (the node is expanded with its failing tests); the
    released code refines the lowest-scored thought and writes the code again."""
    script = Script(expand=[thoughts(("Return x + 2.", 0.6), ("Return x.", 0.4)), thoughts(("Done.", 1.0))],
                    expand_fb=[thoughts(("Add one.", 1.0))], solver=[code("x + 2"), code("x + 1")],
                    verify=['{"1-Thought": 0.8}'], refine=["Return x plus one."])
    out = run(script, gvr_rollouts=1, verifier_unflagged=unflagged)
    assert script.roles == ["expand", "solver", "verify"] + (["refine", "solver", "expand"] if refined
                                                               else ["expand_fb"])
    n1 = out["nodes"]["n1"]
    assert n1["refined" if refined else "text"] == (1 if refined else "Return x + 2.")
    assert (n1["prm_scores"], n1.get("prm_history")) == ((None, [[0.8]]) if refined else ([0.8], None))
    assert out["public_pass_rate"] == (1.0 if refined else 0.0)


def test_pub_prm_adds_the_verifier_aggregate_to_passing_code_by_default():
    """The paper's reward is the default: passing code is worth 1 + the Verifier's max step score (1 + 0.7)."""
    assert GvrContext().gvr_reward == "pub_prm"
    script = Script(expand=[thoughts(("Return x + 1.", 1.0)), thoughts(("Done.", 1.0))], solver=[code("x + 1")],
                    verify=['{"1-Thought": 0.7}'])
    out = build_graph(model=RespondingChatModel(respond=script)).invoke(
        {"problem": PROBLEM}, context=GvrContext(structured_output=False, gvr_width=2, gvr_rollouts=1))
    assert "All public test cases passed!\nAbove is the combination" in script.prompts["verify"][0]
    assert out["nodes"]["n1"]["value"] == pytest.approx(1.7) and "refine" not in script.roles


@pytest.mark.parametrize("unread, value", [("half", 1.5), ("random", 1.0 + 0.7012469992347822)])
def test_an_unreadable_verifier_reply_values_passing_code_by_half_or_by_the_released_draw(unread, value):
    """pub_prm values passing code at 1 + the Verifier's max score; an unreadable reply's score is 0.5, or (the
    released code) a uniform draw seeded by the problem, node and refinement: random.Random("T/inc:n1:0:value")'s
    first draw is 0.70124..."""
    script = Script(expand=[thoughts(("Return x + 1.", 1.0)), thoughts(("Done.", 1.0))], solver=[code("x + 1")],
                    verify=["I cannot say."])
    out = run(script, gvr_rollouts=1, gvr_reward="pub_prm", verifier_unread=unread)
    assert out["nodes"]["n1"]["value"] == pytest.approx(value) and out["nodes"]["n1"]["prm_scores"] == [0.5]


def test_unreadable_verifier_scores_every_thought_half_and_counts_it():
    script = two_rollouts(second_scores="I cannot say.")
    out = run(script, gvr_rollouts=2, verifier_threshold=0.2)  # the 0.5s flag nothing, one drawn score does
    assert out["nodes"]["n3"]["prm_history"] == [[0.5, 0.5]]
    assert out["cost"]["parse_failures"] == 1
    # flagged from scores drawn from the problem, node and round, as the released code draws them
    drawn = random.Random("T/inc:n3:0")
    draws = [drawn.random() for _ in range(2)]
    flagged = [i + 1 for i, s in enumerate(draws) if s <= 0.2]
    refined = [p.split("Revise and enhance the ")[1].split("-Thought")[0] for p in script.prompts["refine"][1:]]
    assert refined == [str(i) for i in flagged] == ["2"]


def test_math_style_verifier_sees_no_code_or_feedback():
    script = two_rollouts()
    run(script, gvr_rollouts=1, verifier_input="thoughts")
    prompt = script.prompts["verify"][0]
    assert "Above is a problem and the thoughts to solve it." in prompt and "def inc(x):\n    return" not in prompt


def test_unreadable_thought_list_falls_back_to_sampled_single_thoughts():
    calls = []

    def respond(messages, **kwargs):
        text = "\n".join(str(m.content) for m in messages)
        if "key `Thought` as the thought key" in text:
            calls.append(kwargs)
            return '{"Thought": "Add one.", "Reasonableness": 0.9}'
        if "Reasonableness" in text:
            return "no list here"
        return code("x + 1")

    model = RespondingChatModel(respond=respond, pass_kwargs=True)
    out = build_graph(model=model).invoke({"problem": PROBLEM}, context=GvrContext(
        structured_output=False, gvr_width=2, gvr_rollouts=1))
    assert [(n["text"], n["prior"]) for n in (out["nodes"]["n1"], out["nodes"]["n2"])] == [("Add one.", 0.9)] * 2
    assert [(c["temperature"], c["seed"]) for c in calls[:2]] == [(0.7, 1), (0.7, 2)]
    assert out["cost"]["parse_failures"] >= 1


def test_problem_without_public_tests_is_valued_by_the_verifier():
    script = Script(expand=[thoughts(("Return x + 1.", 1.0)), thoughts(("Done.", 1.0))], solver=[code("x + 1")],
                    verify=['{"1-Thought": 0.8}'])
    context = GvrContext(structured_output=False, gvr_width=1, gvr_rollouts=1)
    out = build_graph(model=RespondingChatModel(respond=script)).invoke(
        {"problem": {**PROBLEM, "public_tests": []}}, context=context)
    assert out["nodes"]["n1"]["value"] == 0.8 and out["stop_reason"] == "unverified"
    assert out["public_pass_rate"] is None and "refine" not in script.roles


def test_pure_rules():
    assert parse_location('{"problematic id": 3, "explanation": "step 1 is fine"}', 3) == 2
    assert parse_location("The 2-Thought is wrong.", 3) == 1
    assert parse_location("Thought 4 is wrong.", 3) is None and parse_location("none", 3) is None
    assert parse_location('{"problematic id": 0}', 3) is None
    assert flag_thoughts([0.6, 0.4, 0.5], "threshold", 0.5) == [1, 2]  # the paper's ≤
    assert flag_thoughts([0.6, 0.4, 0.5], "threshold", 0.5, "lt") == [1]
    assert flag_thoughts([0.9, 0.8], "threshold", 0.5) == []  # none flagged: nothing (the paper)
    assert flag_thoughts([0.9, 0.8], "threshold", 0.5, unflagged="lowest") == [1]  # the released fallback
    assert flag_thoughts([0.3, 0.3, 0.9], "locate_min", 0.5) == [0]  # ties: the earliest
    assert flag_thoughts([], "threshold", 0.5) == []
    assert [aggregate([0.2, 0.9, 0.4], how) for how in ("max", "min", "last")] == [0.9, 0.2, 0.4]
    assert aggregate([0.2, 0.4], "mean") == pytest.approx(0.3)
    context = GvrContext(gvr_reward="pub_prm")
    assert value_of(0.5, True, 0.9, context) == 0.5 and value_of(1.0, True, 0.9, context) == 1.9
    assert value_of(1.0, True, None, GvrContext()) == 1.0 and value_of(0.0, False, 0.3, GvrContext()) == 0.3
    programs = [{"node": "a", "code": "x", "value": 0.5}, {"node": "b", "code": "y", "value": 1.0},
                {"node": "c", "code": "y", "value": 0.0}, {"node": "d", "code": "z", "value": 1.0}]
    assert best_program(programs)["node"] == "b" and best_program([]) is None


def test_an_empty_refine_reply_keeps_the_thought_it_was_asked_to_replace():
    script = two_rollouts(refines=("   ", "Return two."))
    out = run(script, gvr_rollouts=2, verifier_threshold_rule="lt")
    assert out["nodes"]["n1"]["text"] == "Return x + 2." and out["nodes"]["n1"]["refined"] == 0
    assert script.prompts["solver"][1].endswith("\nThought: Return x + 2.")  # the code is rewritten from it


def test_the_verifier_scores_on_a_model_of_its_own_while_the_search_stays_on_its_model():
    """CodePRM's Table 2 and Fig. 6 verify with another model: `verifier_model` at its own endpoint."""
    import json

    from codeforest.bench import result_settings
    from codeforest.scripted_endpoint import ScriptedEndpoint

    script = Script(expand=[thoughts(("Return x + 2.", 0.6), ("Return x + 1.", 0.4)),
                            thoughts(("Keep it.", 0.5), ("Check types.", 0.5))],
                    solver=[code("x + 2"), code("x + 1")], refine=["Thought: Return x plus one."])
    with ScriptedEndpoint([], respond=lambda body: '{"1-Thought": 0.2}') as api:
        out = run(script, gvr_rollouts=1, verifier_model="prm-judge", verifier_base_url=api.url)
        asked = [json.dumps(body) for body in api.requests]
    assert "verify" not in script.roles and script.roles[:4] == ["expand", "solver", "refine", "solver"]
    assert len(asked) == 1 and '"prm-judge"' in asked[0] and "judge the correctness of each thought" in asked[0]
    assert out["nodes"]["n1"]["replaced_thought"] == "Return x + 2."  # flagged by the endpoint's 0.2
    assert out["cost"]["llm_calls"] == len(script.roles) + 1
    context = GvrContext(verifier_model="prm-judge", verifier_base_url="http://user:secret@127.0.0.1:1/v1")
    assert result_settings(context) == {"verifier_model": "prm-judge"}  # the endpoint URL is never written


def test_a_verifier_endpoint_needs_its_model_name_and_the_llm_verifier():
    with pytest.raises(ValueError, match="verifier_model"):
        GvrContext(verifier_base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="verifier='http'"):
        GvrContext(verifier="http", verifier_url="http://127.0.0.1:1/prm", verifier_model="prm-judge")


def test_the_http_verifier_needs_its_url_before_any_search():
    with pytest.raises(ValueError, match="needs verifier_url"):
        GvrContext(verifier="http")
    assert GvrContext(verifier="http", verifier_url="http://127.0.0.1:1/prm").verifier_url
