"""The released LDB block trace (rethink_block_trace='released'): its block split, its runs in the real sandbox, and
the four-message analysis chat RethinkMCTS sends with it."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from codeforest.agents.critic import LDB_STOPS
from codeforest.graphs import rethink_mcts
from codeforest.tools import ldb
from tests.fakes import RespondingChatModel, RoleScript, thought_list

QUIRKS = """def f(x):
    y = 0
    while True:
        y += 1
        if y > x:
            break
        pass
    raise ValueError
    return y
    z = 1
"""
BELOW_ZERO = """
def below_zero(operations):
    balance = 0
    for op in operations:
        balance += op
        if balance < 0:
            return True
    return False
"""
FAILED = "\nassert below_zero([1, 2, -4, 5]) == False\n\n# Current Execution Output: \nTrue"


def test_the_block_split_keeps_ldbs_quirks():
    # the def; then in f: y = 0; the loop header; its body up to the if; the return after the loop (reached by the
    # break). No block holds the raise, the pass, or z = 1 after the return
    assert ldb.block_bounds(QUIRKS) == [(1, 1), (2, 2), (3, 3), (4, 5), (9, 9)]
    with pytest.raises(ValueError):  # a call of a subscript of anything but a name: LDB's split fails
        ldb.block_bounds("def g(a):\n    return 1\nx = a.b[0](1)\n")


def test_the_program_ldb_traces_from_a_reply():
    reply = "Sure:\n```python\nimport math\ndef f(x):\n    return x\nif __name__ == '__main__':\n    print(f(1))\n```"
    assert ldb.program_of(reply) == "\nimport math\ndef f(x):\n    return x\nprint(f(1))\n"  # main block dedented
    assert ldb.program_of(ldb.IMPORT_HEADER + "x = 1\n") == "x = 1\n"


def test_the_released_trace_runs_in_the_sandbox():
    blocks = ldb.released_trace(BELOW_ZERO, FAILED, "below_zero")
    state = "    # operations=[1, 2, -4, 5]\tbalance="
    assert ldb.blocks_text(blocks) == (  # the released ldb.py's text for this program and test, character for character
        f"\n[BLOCK-0]\n    # operations=[1, 2, -4, 5]\n    balance = 0\n{state}0"
        f"\n[BLOCK-1]\n{state}0\n    for op in operations:\n{state}0\top=1"
        f"\n[BLOCK-2]\n    {state}0\top=1\n        balance += op\n        if balance < 0:\n    for op in operations:\n"
        f"{state}1\top=2"
        f"\n[BLOCK-3]\n    {state}1\top=2\n        balance += op\n        if balance < 0:\n    for op in operations:\n"
        f"{state}3\top=-4"
        f"\n[BLOCK-4]\n    {state}3\top=-4\n        balance += op\n        if balance < 0:\n    {state}-1\top=-4"
        f"\n[BLOCK-5]\n        {state}-1\top=-4\n            return True\n        {state}-1\top=-4\t_ret=True")
    assert ldb.released_trace("def below_zero(x):\n    return 1 / 0\n", FAILED, "below_zero") == (
        "*execution fail*This line is wrong: ```    _ret = 1 / 0```\nZeroDivisionError: division by zero")
    assert ldb.released_trace("def other(x):\n    return x\n", FAILED, "below_zero").startswith("*execution fail*")
    # a one-line loop ending the program leaves LDB no line to print its values at: the trace run still decides
    looping, summing = "def below_zero(x):\n    while True: pass\n", "def below_zero(x):\n    for i in x: pass\n"
    assert ldb.released_trace(looping, FAILED, "below_zero") == "*timeout*"
    assert ldb.released_trace(summing, FAILED, "below_zero") == \
        "*execution fail*no line after a block's header to print its values at"


def test_rethink_sends_the_released_block_analysis_chat():
    script = RoleScript([("provide a new Thought to replace", "rethink"), ("block by block", "blocks"),
                         ("correctness score in range [-1, 1]", "self_eval"), ("Reasonableness", "expand"),
                         ("Complete the Python program", "solver")],
                        expand=[thought_list(("Track the balance.", 1.0))] * 2,
                        solver=[f"```python{BELOW_ZERO}```"], blocks=['{"block": "BLOCK-5", "correct": "False"}\n'])
    model = RespondingChatModel(respond=script, pass_kwargs=False)
    problem = {"id": "T/b", "prompt": "def below_zero(operations):\n", "kind": "function",
               "entry_point": "below_zero", "public_tests": ["assert below_zero([1, 2, -4, 5]) == False"]}
    context = rethink_mcts.RethinkContext(structured_output=False, rethink_width=1, rethink_rollouts=1,
                                          rethink_max_rethinks=0, rethink_feedback_layout="released",
                                          rethink_block_trace="released", released_text=True, code_shown="reply")
    out = rethink_mcts.build_graph(model=model).invoke({"problem": problem}, context=context)
    chat = model.calls[2]
    assert script.roles == ["expand", "solver", "blocks", "expand"] and [type(m) for m in chat] == \
        [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert chat[1].content.endswith(problem["prompt"] + "\nThought: Track the balance.")
    assert chat[2].content == BELOW_ZERO  # the program, as the model's own answer
    assert chat[3].content.startswith(f"The code above fails the given unit test:\n{FAILED}. \nHelp me debug this.")
    assert chat[3].content.endswith(ldb.blocks_text(ldb.released_trace(BELOW_ZERO, FAILED, "below_zero")) + "\n")
    assert model.call_kwargs[2]["stop"] == LDB_STOPS and model.call_kwargs[2]["top_p"] == 1
    feedback = out["nodes"]["n1"]["verbal_feedback"]
    assert feedback.endswith("\n[BLOCK-5]\n" + feedback.split("\n[BLOCK-5]\n")[1].split("\n\n")[0]
                             + '\n\n{"block": "BLOCK-5", "correct": "False"}\n')  # the reply as written
