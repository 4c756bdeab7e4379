"""CodeTree driven by a scripted model: every edge, the exact node values of a small tree, the budget."""

from __future__ import annotations

import pytest

from codeforest.agents import critic
from codeforest.graphs.codetree import CodeTreeContext, build_graph
from tests.fakes import RespondingChatModel

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}
ROLES = {"provides strategies": "strategy", "Reflect on the implementation": "reflection",
         "only responds with python code": "solver", "past function implementation": "debugger",
         "your past program": "debugger",
         "Score from 0 to 5": "score", "code reviewer": "verify"}


class RoleScript:
    """Replies per role, in order; records which role was called, and every prompt."""

    def __init__(self, **replies):
        self.replies = {role: list(items) for role, items in replies.items()}
        self.roles: list[str] = []
        self.prompts: dict[str, list[str]] = {}

    def __call__(self, messages):
        role = next(r for key, r in ROLES.items() if key in messages[0].content)
        self.roles.append(role)
        self.prompts.setdefault(role, []).append("\n".join(str(m.content) for m in messages))
        assert self.replies.get(role), f"no scripted reply left for {role}"
        return self.replies[role].pop(0)


def code(body: str) -> str:
    return f"```python\ndef inc(x):\n    return {body}\n```"


def run(script: RoleScript, **settings):
    context = CodeTreeContext(structured_output=False, **settings)
    return build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": PROBLEM}, context=context)


def test_a_small_tree_takes_every_edge_with_exact_values():
    script = RoleScript(
        strategy=["1. Add one to the argument.\n2. Return the successor of x."],
        solver=[code("x"), code("x + 1")],
        score=["Outputs equal the inputs.\n2", "Off by one.\n3", "Constant output.\n0"],
        reflection=["1. Add one to x instead of returning it.\n2. Multiply the argument by two.",
                    "1. Subtract one from the result."],
        debugger=[code("x + 2"), code("x + 1"), code("0")],
        verify=["It misses negative inputs.\nFalse", "Correct for every integer.\nTrue"],
    )
    out = run(script)
    nodes = out["nodes"]
    assert script.roles == ["strategy", "solver", "score", "reflection", "debugger", "score", "reflection",
                            "debugger", "verify", "debugger", "score", "solver", "verify"]
    assert {i: (n["depth"], n["parent"]) for i, n in nodes.items()} == {
        "n1": (1, None), "n2": (1, None), "n3": (2, "n1"), "n4": (2, "n1"), "n5": (3, "n3")}
    assert nodes["n1"]["value"] == pytest.approx(0 + 2 / 15) and nodes["n1"]["status"] == "refined"
    assert nodes["n3"]["value"] == pytest.approx(0 + 3 / 15) and nodes["n3"]["status"] == "refined"
    assert nodes["n5"]["value"] == pytest.approx(1 + 5 / 15) and nodes["n5"]["decision_reason"] == "depth limit"
    assert nodes["n4"]["value"] == 0 and nodes["n4"]["decision_reason"] == "value below its parent's"
    assert nodes["n2"]["value"] == pytest.approx(1 + 5 / 15) and nodes["n2"]["status"] == "accepted"
    assert out["stop_reason"] == "accepted" and out["final_node"] == "n2" and out["public_pass_rate"] == 1.0
    assert out["cost"]["programs"] == 5 and out["cost"]["llm_calls"] == 13
    # the rejected visible pass: review kept on the node, stripped from the Debugger, given to the Thinker
    assert "[additional review]:" in nodes["n5"]["feedback"] and "negative inputs" in nodes["n5"]["feedback"]


@pytest.mark.parametrize("review", [False, True])
def test_critic_rejection_reaches_the_thinker_and_the_debugger_only_with_review(review):
    """The released code strips the Critic's review from the Debugger's feedback; the paper's App. A.1
    (``codetree_debugger_review``) gives it the review too."""
    script = RoleScript(
        strategy=["1. Add one to the argument."],
        solver=[code("x + 1 if x < 100 else x")],
        verify=["Hard-codes a bound at 100.\nFalse", "General now.\nTrue"],
        reflection=["1. Remove the special case for large x."],
        debugger=[code("x + 1")],
    )
    out = run(script, codetree_debugger_review=review)
    assert out["stop_reason"] == "accepted" and out["final_node"] == "n2"
    assert "Hard-codes a bound at 100." in script.prompts["reflection"][0]
    assert ("Hard-codes a bound at 100." in script.prompts["debugger"][0]) == review
    assert "Remove the special case for large x." in script.prompts["debugger"][0]


def test_forced_accept_at_max_depth():
    script = RoleScript(strategy=["1. Add one to the argument."], solver=[code("x + 1")],
                        verify=["Looks fragile.\nFalse", "Still fragile.\nFalse"],
                        reflection=["1. Rewrite it more carefully."], debugger=[code("1 + x")])
    out = run(script, codetree_max_depth=2)
    assert out["stop_reason"] == "accepted" and out["final_node"] == "n2"
    assert out["nodes"]["n2"]["decision_reason"] == "forced accept at max depth"


def test_budget_exhaustion_returns_the_best_node_or_the_last_failing_one():
    def script():
        return RoleScript(strategy=["1. Add one to the argument.\n2. Add two.\n3. Add three."],
                          solver=[code("x + 1 if x == 1 else 0"), code("0"), code("0")],
                          score=["Close.\n4", "Nothing.\n0", "Nothing.\n0"],
                          reflection=["1. Fix the second case."], debugger=[code("0")])

    first = script()
    out = run(first, codetree_max_programs=3)
    assert out["stop_reason"] == "budget_exhausted" and out["cost"]["programs"] == 3
    assert first.roles[-2:] == ["solver", "score"], "no reflection once the budget is spent"
    assert out["final_node"] == "n1" and out["nodes"]["n1"]["value"] == pytest.approx(0.5 + 4 / 15)
    last = run(script(), codetree_max_programs=3, codetree_final="last_failing")
    assert last["final_node"] == "n2"  # n1 -> its child n4 -> n2, the last program run (and failing)


def test_tree_exhausted_when_every_branch_is_aborted():
    script = RoleScript(strategy=["1. Add one to the argument."], solver=[code("0")], score=["Nothing.\n0"])
    out = run(script)
    assert script.roles == ["strategy", "solver", "score"]  # value 0 == parent 0 and depth 1 > score 0: abort
    assert out["stop_reason"] == "tree_exhausted" and out["final_node"] == "n1"


@pytest.mark.parametrize("parse, value, stop", [("lines", 0.0, "tree_exhausted"), ("released", 2 / 15, "accepted")])
def test_the_critic_score_is_the_last_lines_final_number_or_as_released_its_largest_digit(parse, value, stop):
    """"Outputs 0, expected 2 and 6. The final score is 0.": 0 by its final number (value 0 == the parent's 0 at
    depth 1 > 0: abort), 2 by the released rule, the largest digit 0-5 in the line (value 2/15 > 0: refine), as the
    released run on APPS/84 read "... is 125, ... the final score is 0." as 5."""
    script = RoleScript(strategy=["1. Add one to the argument."], solver=[code("0")],
                        score=["Outputs 0, expected 2 and 6. The final score is 0."],
                        reflection=["1. Return x plus one."], debugger=[code("x + 1")], verify=["Right.\nTrue"])
    out = run(script, codetree_parse=parse)
    assert out["nodes"]["n1"]["value"] == pytest.approx(value) and out["stop_reason"] == stop


def test_the_released_score_reading_takes_the_last_line_as_split():
    assert critic.parse_score_released("Close.\n4 out of 5") == 5 and critic.parse_score("Close.\n4 out of 5") == 4
    assert critic.parse_score_released("Score: 3\n\n") is None and critic.parse_score("Score: 3\n\n") == 3
    assert critic.parse_score_released("Wrong output 987.") is None and critic.parse_score_released("") is None


def test_unreadable_replies_take_the_fallbacks_and_are_counted():
    script = RoleScript(strategy=["I would just solve it."], solver=[code("x + 1")], verify=["Hmm, hard to say."])
    out = run(script)
    assert out["nodes"]["n1"]["text"] == "" and out["stop_reason"] == "accepted"  # unreadable verdict accepts
    assert out["cost"]["parse_failures"] == 2
    assert "Hint:" not in script.prompts["solver"][0]


@pytest.mark.parametrize("order", ["bfs", "dfs"])
def test_variants_write_every_strategy_before_any_reflection(order):
    """The released BFS/DFS run all strategies' programs first: n2 passes, so no Thinker reflection is asked."""
    script = RoleScript(strategy=["1. Add one to the argument.\n2. Return the successor.\n3. Use addition."],
                        solver=[code("x"), code("x + 1")])
    out = run(script, codetree_critic=False, codetree_order=order)
    assert script.roles == ["strategy", "solver", "solver"] and out["final_node"] == "n2"
    assert "Think of 3 strategies" in script.prompts["strategy"][0]  # width 3 by default without the Critic
    assert out["stop_reason"] == "accepted"


# Width 2. The strategies' programs pass 0 (n1) and 1/2 (n2) of the visible tests; n2's reflections give
# n3 (1/2) and n4 (0). BFS keeps a queue by value: [n2, n1] -> expands n2 -> [n1, n3, n4] -> expands n1.
# DFS pushes ascending onto a stack: [n1, n2] -> expands n2 -> [n1, n4, n3] -> expands n3, the best child.
@pytest.mark.parametrize("order, expanded", [("bfs", ["n2", "n1"]), ("dfs", ["n2", "n3"])])
def test_variants_expand_in_value_order(order, expanded):
    script = RoleScript(strategy=["1. Add one.\n2. Special-case one."],
                        solver=[code("x"), code("2 if x == 1 else 0")],
                        reflection=["1. Keep one.\n2. Return zero."] * 2,
                        debugger=[code("2 if x == 1 else 0"), code("0"), code("x + 1")])
    out = run(script, codetree_critic=False, codetree_order=order, codetree_width=2)
    nodes = out["nodes"]
    assert [nodes[i]["parent"] for i in ("n3", "n5")] == expanded
    assert script.roles == ["strategy", "solver", "solver", "reflection", "debugger", "debugger", "reflection",
                            "debugger"]
    assert out["final_node"] == "n5" and out["stop_reason"] == "accepted"


def test_dfs_takes_the_first_of_children_with_equal_values():
    """dfs_real.py reverses every expansion's children before its stable sort: n2's reflections give n3 and n4,
    both passing 1/2, and n3 (the first) is expanded next, as the first strategy is at the top level."""
    script = RoleScript(strategy=["1. Add one.\n2. Special-case one."],
                        solver=[code("x"), code("2 if x == 1 else 0")],
                        reflection=["1. Keep one.\n2. Keep one again."] * 2,
                        debugger=[code("2 if x == 1 else 0"), code("2 if x == 1 else 0"), code("x + 1")])
    out = run(script, codetree_critic=False, codetree_order="dfs", codetree_width=2)
    assert out["nodes"]["n3"]["value"] == out["nodes"]["n4"]["value"] == 0.5
    assert out["nodes"]["n5"]["parent"] == "n3" and out["final_node"] == "n5"


def test_variants_return_no_program_when_nothing_passes():
    script = RoleScript(strategy=["1. Return x.\n2. Return zero.\n3. Return one."],
                        solver=[code("x"), code("0"), code("1")])
    out = run(script, codetree_critic=False, codetree_max_programs=3)
    assert out["final_code"] == "" and out["final_node"] is None and out["stop_reason"] == "budget_exhausted"
    assert "reflection" not in script.roles  # the budget ran out before any expansion: no Thinker call


def test_table4_ablations():
    # w/o verification: a visible pass is accepted without asking the Critic
    script = RoleScript(strategy=["1. Add one."], solver=[code("x + 1")])
    assert run(script, codetree_verification=False)["stop_reason"] == "accepted" and script.roles == [
        "strategy", "solver"]
    # w/o scoring: a failing node gets no Critic score (value = visible pass fraction)
    script = RoleScript(strategy=["1. Add one."], solver=[code("x")], reflection=["1. Add one to x."],
                        debugger=[code("x + 1")], verify=["Right.\nTrue"])
    out = run(script, codetree_scoring=False)
    assert "score" not in script.roles and out["nodes"]["n1"]["value"] == 0.0 and out["stop_reason"] == "accepted"
    # w/o node abort: a child scoring below its parent is refined instead of aborted
    script = RoleScript(strategy=["1. Add one."], solver=[code("2 if x == 1 else 0")],
                        score=["Half right.\n3", "Worse.\n0"], reflection=["1. Return zero."] * 2,
                        debugger=[code("0"), code("x + 1")], verify=["Right.\nTrue"])
    out = run(script, codetree_abort=False)
    assert out["nodes"]["n2"]["status"] == "refined" and out["nodes"]["n2"]["decision_reason"].endswith(
        "(w/o node abort)")
    assert out["final_node"] == "n3" and out["stop_reason"] == "accepted"


def test_strategy_list_asks_again_for_missing_strategies_and_never_debugs():
    script = RoleScript(strategy=["1. Return x.\n2. Return zero.", "1. Add one to x.\n2. Return x plus one."],
                        solver=[code("x"), code("0"), code("x + 1")])
    out = run(script, codetree_order="list", codetree_width=4)
    assert script.roles == ["strategy", "strategy", "solver", "solver", "solver"]
    assert "Think of 4 strategies" in script.prompts["strategy"][0]
    assert "Think Carefully." in script.prompts["strategy"][1]
    assert "Think of 2 strategies" in script.prompts["strategy"][1]
    assert out["final_node"] == "n3" and out["stop_reason"] == "accepted"
    none_pass = RoleScript(strategy=["1. Return x.\n2. Return zero."], solver=[code("x"), code("0")])
    out = run(none_pass, codetree_order="list", codetree_width=2)
    assert none_pass.roles == ["strategy", "solver", "solver"] and out["final_code"] == ""
    assert out["stop_reason"] == "tree_exhausted"


STDIO = {"id": "T/double", "prompt": "Read n and print 2n.", "kind": "stdio", "entry_point": None,
         "public_tests": [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "6\n"}]}


@pytest.mark.parametrize("partial, value", [(True, 0.5 + 3 / 15), (False, 0 + 3 / 15)])
def test_a_stdin_program_passing_half_its_tests_is_credited_or_not_as_released(partial, value):
    """print(4) passes the first of two tests: the paper's execution score counts it (1/2 + 3/15); the released
    stdin/stdout executor never counts a passed test (0 + 3/15). Its feedback in the released layout, too."""
    script = RoleScript(strategy=["1. Print twice the number."], solver=["```python\nprint(4)\n```"],
                        score=["The first output is right.\n3"], reflection=["1. Read n before printing."],
                        debugger=["```python\nprint(2 * int(input()))\n```"], verify=["Right.\nTrue"])
    context = CodeTreeContext(structured_output=False, codetree_partial_credit=partial, codetree_feedback="released")
    out = build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": STDIO}, context=context)
    assert out["nodes"]["n1"]["value"] == pytest.approx(value) and out["stop_reason"] == "accepted"
    assert out["nodes"]["n1"]["feedback"] == ("Tests succeeded:\nInput:\n2\nOutput:\n4\nTests failed:\nInput:\n3\n"
                                              "Expected Output:\n6\nProgram's Output:\n4\n" + "-" * 29)


def test_under_a_released_file_a_stdin_error_shows_pythons_traceback_naming_it():
    """With codetree_released_file the failing stdin program is run again as that file: its feedback is the
    released executor's text (the traceback Python prints for it); without it, codeforest's excerpt."""
    failing = "```python\nraise SystemError('no input read')\n```"
    released_file = "/tmp/codeforest-test-codetree/temp_files/temp_test9.py"
    feedback = {}
    for file in ("", released_file):
        script = RoleScript(strategy=["1. Print twice the number."], solver=[failing], score=["Wrong.\n1"],
                            reflection=["1. Read n."], debugger=["```python\nprint(2 * int(input()))\n```"],
                            verify=["Right.\nTrue"])
        context = CodeTreeContext(structured_output=False, codetree_feedback="released", codetree_released_file=file,
                                  test_timeout=1.0)
        out = build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": STDIO}, context=context)
        feedback[file] = out["nodes"]["n1"]["feedback"]
    traceback = ("Traceback (most recent call last):\n"
                 f'  File "{released_file}", line 1, in <module>\n'
                 "    raise SystemError('no input read')\nSystemError: no input read\n")
    assert feedback[released_file] == ("Tests succeeded:\nNone\nTests failed:\n"
                                       f"2\nProgram's Output: {traceback}\n3\nProgram's Output: {traceback}")
    assert "Traceback" not in feedback[""] and released_file not in feedback[""]


def test_under_a_released_file_stdin_outputs_are_compared_stripped_as_released():
    """4.0 for 4: codeforest reads the numbers by value and passes both tests; the released executor compares the
    stripped texts, so under codetree_released_file the program fails both and the Debugger is asked."""
    out = {}
    for file in ("", "/tmp/codeforest-test-codetree/temp_files/temp_test9.py"):
        script = RoleScript(strategy=["1. Print twice the number."],
                            solver=["```python\nprint(float(2 * int(input())))\n```"], score=["Wrong.\n1"],
                            reflection=["1. Print an integer."], debugger=["```python\nprint(2 * int(input()))\n```"],
                            verify=["Right.\nTrue"] * 2)
        context = CodeTreeContext(structured_output=False, codetree_feedback="released", codetree_released_file=file)
        out[file] = build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": STDIO}, context=context)
    lenient, strict = out.values()
    assert lenient["nodes"]["n1"]["execution"]["passed"] == 2 and lenient["final_node"] == "n1"
    assert strict["nodes"]["n1"]["execution"]["passed"] == 0 and strict["final_node"] == "n2"
    assert strict["nodes"]["n1"]["feedback"] == (
        "Tests succeeded:\nNone\nTests failed:\n"
        + "\n".join(f"Input:\n{n}\nExpected Output:\n{2 * n}\nProgram's Output:\n{2.0 * n}\n" + "-" * 29
                    for n in (2, 3)))


TOTAL = {"id": "T/total", "prompt": 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum."""\n',
         "kind": "function", "entry_point": "total", "public_tests": ["assert total([1, 2]) == 3",
                                                                      "assert total([]) == 0"]}


@pytest.mark.parametrize("shown", ["program", "written"])
def test_the_code_shown_is_the_program_run_or_as_written_with_the_released_function_feedback(shown):
    """The model's program lacks the prompt's import: codeforest runs it with the import put first and shows that
    program, or (codetree_code_shown=written) shows it as written, as the released code does; under a released file
    each failing assert reads as the value its call prints in the released executor."""
    written = "def total(xs: List[int]) -> int:\n    print('summing')\n    return sum(xs) + 1"
    script = RoleScript(strategy=["1. Add the numbers."], solver=[f"```python\n{written}\n```"],
                        score=["Off by one.\n2"], reflection=["1. Drop the plus one."],
                        debugger=["```python\ndef total(xs):\n    return sum(xs)\n```"], verify=["Right.\nTrue"])
    context = CodeTreeContext(structured_output=False, codetree_feedback="released", codetree_code_shown=shown,
                              codetree_released_file="/tmp/codeforest-test-codetree/temp_files/temp_test9.py")
    out = build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": TOTAL}, context=context)
    assert out["nodes"]["n1"]["code"] == f"from typing import List\n{written}" and out["final_node"] == "n2"
    assert out["nodes"]["n1"]["feedback"] == (
        "\nTests failed:\nassert total([1, 2]) == 3 # incorrect program's output: summing\n4\n"
        "\nassert total([]) == 0 # incorrect program's output: summing\n1\n")
    [debugger_prompt] = script.prompts["debugger"]
    assert (f"```python\n{written}\n```" in debugger_prompt) == (shown == "written")
    assert (f"from typing import List\n{written}" in debugger_prompt) == (shown == "program")
