"""released_text and code_shown: thoughts read and written back, and the code shown, as the released RethinkMCTS and
CodePRM code does (the settings their conformance replays run with)."""

from __future__ import annotations

import pytest

from codeforest.agents.critic import parse_evaluation
from codeforest.agents.thinker import parse_released_thoughts, step_tags
from codeforest.agents.verifier import parse_location
from codeforest.graphs import gvr, rethink_mcts
from codeforest.graphs.codeprm import refined_thought
from codeforest.graphs.search import released_numbered, state_text
from tests.fakes import RespondingChatModel, RoleScript

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}
TWO = '[{"Thought-1": " Return x + 2.", "Reasonableness": 0.6}, {"Thought-2": " Return x + 1.", "Reasonableness": 0.4}]'


def reply(body: str) -> str:
    return f"Here it is:\n```python\ndef inc(x):\n    return {body}\n```\nDone."


@pytest.mark.parametrize("text, find_list, expected", [
    (TWO, False, [(" Return x + 2.", 0.6), (" Return x + 1.", 0.4)]),  # as written: the leading space stays
    ('{"Thought-1": "a", "Reasonableness": 1}, {"Thought-2": "b", "Reasonableness": 0}', False,
     [("a", 1.0), ("b", 0.0)]),  # no brackets: wrapped in them
    ('```json\n[{"Thought-1": "a", "Reasonableness": 0.5}]\n```', False, [("a", 0.5)]),
    ('[{"Thought-2": "a", "Reasonableness": 1}]', False, None),  # keys out of their places: the fallback
    ('[{"Thought-1": 5, "Reasonableness": 1}]', False, None),  # not a string
    ('[{"Thought-1": "a"}]', False, None),  # no Reasonableness
    ("", False, None),
    ('Ideas:\n[{"Thought-1": "a", "Reasonableness": 1}] ok', False, None),  # RethinkMCTS: the prose breaks the JSON
    ('Ideas:\n[{"Thought-1": "a", "Reasonableness": 1}] ok', True, [("a", 1.0)]),  # CodePRM finds the list in it
    (f"{TWO[:-1]}, " + '{"Thought-3": "c", "Reasonableness": 0}]', False,
     [(" Return x + 2.", 0.6), (" Return x + 1.", 0.4), ("c", 0.0)]),  # more than the width: all kept
])
def test_a_thought_list_is_read_as_released(text, find_list, expected):
    assert parse_released_thoughts(text, find_list) == expected


def test_the_state_keeps_each_thought_as_the_released_state_holds_it():
    nodes = {"root": {"id": "root", "kind": "root", "parent": None},
             "n1": {"id": "n1", "kind": "thought", "parent": "root", "text": "\n", "action": "\n"},
             "n2": {"id": "n2", "kind": "thought", "parent": "n1", "text": "b"},
             "n3": {"id": "n3", "kind": "thought", "parent": "n2", "text": "c", "action": "\nNew Thought: c\n"}}
    path = ["root", "n1", "n2", "n3"]
    assert state_text(nodes, path, released=True) == "\n\nThought: b\nNew Thought: c\n"
    assert state_text(nodes, path) == "\nThought: b\nThought: c"  # the blank fallback left out, each stripped
    assert released_numbered(nodes, path) == (["n2", "n3"], ["b", "c"])  # the line break alone is not numbered
    assert rethink_mcts.thoughts_text(nodes, path, released=True) == "\nThought: b\nNew Thought: c\n"


def test_released_readings_of_the_locator_the_evaluation_and_a_refined_thought():
    named = 'Thought 2 is wrong, {"problematic id": 3}'
    assert parse_location(named, 3) == 2 and parse_location(named, 3, released=True) == 1
    assert parse_location("-1", 3, released=True) is None and parse_location("2.7 it is", 3, released=True) == 1
    assert parse_evaluation("1.5") == 1.0 and parse_evaluation("1.5", clamp=False) == 1.5
    node = {"text": "old", "refined": 0}
    assert refined_thought(node, "", "")["action"] == "\nThought: "  # an empty reply still replaces, as released
    assert refined_thought(node, "", "")["text"] == "old"
    assert refined_thought(node, "x", "1-Thought: x")["action"] == "1-Thought: x"
    assert refined_thought(node, "", None) is None


def test_gvr_released_text_and_whole_reply_reach_every_prompt():
    script = RoleScript(
        [("find which thought is flawed", "locate"), ("Revise and enhance the", "refine"),
         ("Reasonableness", "expand"), ("Complete the Python program", "solver")],
        expand=["Sure.\n" + TWO[:-1] + ', {"Thought-3": " Check.", "Reasonableness": 0.0}] hope it helps', TWO],
        solver=[reply("x + 2"), reply("x + 1")],
        locate=['Thought 1 is wrong, {"problematic id": 2}'],
        refine=["Add one to x."])
    context = gvr.GvrContext(structured_output=False, gvr_width=2, gvr_rollouts=1, gvr_reward="pub_test",
                             gvr_verify="llm_locate", released_text=True, code_shown="reply")
    out = gvr.build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": PROBLEM}, context=context)
    nodes = out["nodes"]
    assert script.roles == ["expand", "solver", "locate", "refine", "solver", "expand"]
    assert [nodes[i]["action"] for i in ("n2", "n3")] == ["\nThought:  Return x + 1.", "\nThought:  Check."]
    assert nodes["n3"]["parent"] == "root"  # all three thoughts kept, at width 2
    assert PROBLEM["prompt"] + "\nThought:  Return x + 2." in script.prompts["solver"][0]
    assert reply("x + 2") in script.prompts["locate"][0]  # the whole reply, not the program alone
    assert "1-Thought: Return x + 2." in script.prompts["locate"][0]
    assert "Revise and enhance the 1-Thought" in script.prompts["refine"][0]  # the first number: 1, not 2
    assert PROBLEM["prompt"] + "\nThought: Add one to x." in script.prompts["solver"][1]
    assert nodes["n1"]["action"] == "\nThought: Add one to x." and out["final_code"].endswith("return x + 1")


def test_rethink_released_text_keeps_the_rethought_reply_and_the_unclamped_evaluation():
    script = RoleScript(
        [("provide a new Thought to replace", "rethink"), ("correctness score in range [-1, 1]", "self_eval"),
         ("Reasonableness", "expand"), ("Complete the Python program", "solver")],
        expand=[TWO, TWO], solver=[reply("x + 2"), reply("x + 1")], rethink=["New Thought: add one"],
        self_eval=["1.5"])
    context = rethink_mcts.RethinkContext(structured_output=False, rethink_width=2, rethink_rollouts=1,
                                          rethink_block_info=False, rethink_feedback_layout="released",
                                          released_text=True, code_shown="reply", rethink_eval_clamp=False)
    out = rethink_mcts.build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": PROBLEM},
                                                                                    context=context)
    assert script.roles == ["expand", "solver", "rethink", "solver", "self_eval", "expand"]
    assert PROBLEM["prompt"] + "\nThought:  Return x + 2." in script.prompts["solver"][0]
    assert reply("x + 2") in script.prompts["rethink"][0]
    assert PROBLEM["prompt"] + "\nNew Thought: add one\n" in script.prompts["solver"][1]  # the reply as written
    assert reply("x + 1") in script.prompts["self_eval"][0]
    assert out["nodes"]["n1"]["reward"] == pytest.approx(0.8 + 0.2 * 1.5)  # 1.1: the evaluation as written


def test_gvr_released_fallback_asks_once_for_width_replies():
    script = RoleScript(
        [("provide a new thought", "fallback"), ("Reasonableness", "expand"),
         ("Complete the Python program", "solver")],
        expand=["no idea", TWO],
        fallback=[['{"Thought": " Add one.", "Reasonableness": 0.5}',
                   '```json\n{"Thought": "Inc.", "Reasonableness": 0.25}\n```']],  # two choices of one request
        solver=[reply("x + 1")])
    model = RespondingChatModel(respond=script)
    context = gvr.GvrContext(structured_output=False, gvr_width=2, gvr_rollouts=1, gvr_reward="pub_test",
                             released_text=True, gvr_fallback="one_request")
    out = gvr.build_graph(model=model).invoke({"problem": PROBLEM}, context=context)
    assert script.roles == ["expand", "fallback", "solver", "expand"]
    asked = model.call_kwargs[1]
    assert (asked["n"], asked["temperature"], asked["max_tokens"], "seed" in asked) == (2, 0.7, 2048, False)
    nodes = out["nodes"]
    assert [(nodes[i]["action"], nodes[i]["prior"]) for i in ("n1", "n2")] == [(" Add one.", 0.5), ("Inc.", 0.25)]
    assert PROBLEM["prompt"] + " Add one." in script.prompts["solver"][0]  # a sampled thought joins unlabelled


def test_the_released_extractor_reading_keeps_each_step_tag_as_written():
    reply = "Here:\n<step>Step 1: Read n.</step>\n<step> **Count.**\n\nEach digit.\n</step> <step></step>"
    assert step_tags(reply) == ["Step 1: Read n.", "**Count.**\n\nEach digit.", ""]
