"""Prompt layouts a prompts folder can ask for, which a replay of the released CodeTree needs: the thinker's
format sentence joined as written, the test results as a second user message, wording per problem kind; the
Debugger's and Critic's feedback stripped; a verdict's analysis kept as the released code keeps it."""

from __future__ import annotations

import yaml

from codeforest.agents import critic, debugger, thinker
from codeforest.prompts import load_prompt
from tests.fakes import ScriptedChatModel

PROBLEM = {"id": "T/1", "prompt": "Read n, print 2n.", "kind": "stdio", "entry_point": None}
THINKER = {"inputs": ["problem", "k", "strategy", "code", "feedback"], "templates": {
    "strategy": {"system": {"function": "F {k}.", "stdio": "S {k}."}, "dynamic": "Flexible.",
                 "user": "{problem}"},
    "reflection": {"system": {"function": "RF {k}.", "stdio": "RS {k}.\n"}, "dynamic": "Flexible.",
                   "user": "[problem] {problem}\n\n[proposed strategy] {strategy}\n",
                   "results": "[results]:\n{feedback}"}}}


def roles_and_texts(model: ScriptedChatModel) -> list[tuple[str, str]]:
    return [(m.type, m.content) for m in model.calls[-1]]


def test_a_thinker_file_can_glue_its_format_sentence_split_by_kind_and_send_results_apart(tmp_path):
    (tmp_path / "thinker.yaml").write_text(yaml.safe_dump(THINKER), encoding="utf-8")
    prompt = load_prompt("thinker", tmp_path)
    model = ScriptedChatModel.of("1. Double it, then print.", "1. Print n * 2 instead.")
    assert thinker.strategies(model, prompt, PROBLEM).value == ["Double it, then print."]
    assert roles_and_texts(model) == [("system", "S multiple.Flexible."), ("human", "Read n, print 2n.")]
    thinker.reflections(model, prompt, PROBLEM, strategy="Double it.", code="print(n)", feedback="\nfailed")
    assert roles_and_texts(model) == [
        ("system", "RS one or multiple (if there is).\nFlexible."),
        ("human", "[problem] Read n, print 2n.\n\n[proposed strategy] Double it.\n"), ("human", "[results]:\n\nfailed")]


def test_the_packaged_thinker_keeps_its_line_break_before_the_format_sentence():
    model = ScriptedChatModel.of("1. Double it, then print.")
    thinker.strategies(model, load_prompt("thinker"), PROBLEM)
    system = model.calls[-1][0].content
    assert system.endswith("formats. Think of multiple strategies in English (not code) to solve the problem, each "
                           "described in a few sentences on a single line. Number them \"1.\", \"2.\", and so on.\n"
                           "The number of alternatives (either one or multiple) should be determined given this "
                           "specific case.")
    assert len(model.calls[-1]) == 2


def test_the_debugger_and_critic_read_feedback_stripped_and_without_the_review():
    model = ScriptedChatModel.of("```python\nprint(2 * int(input()))\n```", "Looks fine.\n3")
    debugger.repair(model, load_prompt("debugger"), PROBLEM, code="print(n)",
                    feedback="\nTests failed:\n1 -> 1\n\n[additional review]:\n\nwrong", reflection="Double it.")
    results = model.calls[-1][3].content
    assert results.startswith("[unit test results from previous implement]:\nTests failed:\n1 -> 1\n\n")
    critic.score_tests(model, load_prompt("critic"), PROBLEM, code="print(n)", feedback="\nTests failed:\n1 -> 1\n")
    assert model.calls[-1][1].content.endswith("[execution results]\nTests failed:\n1 -> 1")


def test_a_verdicts_analysis_is_its_lines_but_the_last_without_blank_ones_or_the_first_of_a_short_reply():
    assert critic.text_analysis("The loop is off by one.\n\nIt misses the end.\n\nFalse\n") == \
        "The loop is off by one.\nIt misses the end."
    assert critic.text_analysis("It misses the end.\n\nFalse") == "It misses the end."
    assert critic.text_analysis("False") == "False"
    assert critic.text_analysis("") == ""


def test_the_released_numbered_list_reading_keeps_items_as_written_and_reads_numbers_inside_lines():
    """codetree_parse=released: after the first "N." of any line of 5 characters or more, as written (leading space
    kept); "-1. The given..." inside a sentence is an item too, as in the released run on HumanEval/135."""
    reply = ("1. **Issue**: it returns too early.\n2.Fix the loop bound.\n```python\n    no such element exists"
             " then return -1. The given array will not contain\n```\n3.\nok")
    assert thinker.parse_released(reply, 10) == [" **Issue**: it returns too early.", "Fix the loop bound.",
                                                 " The given array will not contain"]
    assert thinker.parse_numbered(reply, 10) == ["**Issue**: it returns too early.", "Fix the loop bound."]
    model = ScriptedChatModel.of(reply)
    assert thinker.strategies(model, load_prompt("thinker"), PROBLEM, released=True).value[0] == \
        " **Issue**: it returns too early."
