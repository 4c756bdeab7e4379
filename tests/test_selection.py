"""Probe inputs (mutations of the public inputs, validated model calls, behaviour in the sandbox) and the
selectors over hand-made output matrices (issue 21)."""

from __future__ import annotations

import pytest

from codeforest.graphs.selection import Candidate, kept_inputs, output_groups, select
from codeforest.tools.probes import (
    behaviour,
    displayed,
    mutate_call,
    mutate_stdin,
    mutate_value,
    mutated_inputs,
    probe,
    public_calls,
    valid_call,
)

FUNCTION = {"id": "T/f", "kind": "function", "entry_point": "f",
            "public_tests": ["assert f(3, [1, 2]) == 5", "assert abs(f(0, 'ab') - 2) < 1e-9", "assert f(3, [1, 2])"]}
STDIO = {"id": "T/s", "kind": "stdio", "public_tests": [{"input": "3\n1 5 2\n", "output": "8\n"}]}


def test_public_calls_are_read_from_any_assert_shape_once():
    assert public_calls(FUNCTION) == ["f(3, [1, 2])", "f(0, 'ab')"]


def test_mutations_keep_each_type():
    assert mutate_value(3) == [4, 2, 0, -3] and mutate_value(2.5) == [3.5, 1.5, 0.0, -2.5]
    assert mutate_value(True) == [False]
    assert mutate_value([3, 1]) == [[], [3], [3, 1, 1], [3, 1, 3, 1], [1, 3], [1, 3]]
    assert mutate_value("ba") == ["", "b", "baa", "baba", "ab", "ab"]
    assert mutate_value({"a": 1, "b": 2}) == [{}, {"a": 1}] and mutate_value(None) == []
    for variant in mutate_call("f(3, [1, 2])", "f"):
        assert valid_call(variant, "f") == variant  # each one a call of the entry point
    assert "f(3, [])" in mutate_call("f(3, [1, 2])", "f") and "f(-3, [1, 2])" in mutate_call("f(3, [1, 2])", "f")
    assert mutate_stdin("3\n1 5") == ["4\n1 5", "2\n1 5", "0\n1 5", "-3\n1 5", "3\n2 5", "3\n0 5", "3\n-1 5",
                                      "3\n1 6", "3\n1 4", "3\n1 0", "3\n1 -5", "3\n5 1"]
    # a word is edited as a string is; a line of numbers is sorted by value
    assert mutate_stdin("ab\n") == ["\n", "a\n", "abb\n", "abab\n", "ba\n"]
    assert "3 9 10" in mutate_stdin("3 10 9") and "10 3 9" not in mutate_stdin("3 10 9")
    assert "9 10 ab" in mutate_stdin("ab 10 9") and "a 10 9" in mutate_stdin("ab 10 9")


def test_outputs_the_tests_cannot_tell_apart_are_one_behaviour():
    from codeforest.tools.probes import behaviour

    for alike in (["3", "3.0"], ["{1: 'a', 2: 'b'}", "{2: 'b', 1: 'a'}"], ["0.30000000000000004", "0.3"],
                  ["{1, 2}", "{2, 1}"]):
        assert behaviour(alike[0]) == behaviour(alike[1]), alike
    for apart in (["3", "'3'"], ["[1]", "(1,)"], ["True", "1"], ["0.3", "0.31"], ["<raised E>", "'<raised E>'"]):
        assert behaviour(apart[0]) != behaviour(apart[1]), apart
    assert behaviour("<object at 0x1>") != behaviour("<object at 0x2>")  # no literal: its text
    for alike in (["1 2 3", "1\n2\n3"], ["0.5", "0.500000"], ["1  2", "1 2"], ["3", "3.0"], ["007", "7"]):
        assert behaviour(alike[0], stdio=True) == behaviour(alike[1], stdio=True), alike
    for apart in (["1 2", "12"], ["0.5", "0.51"], ["yes", "Yes"], ["123456789", "123456788"]):
        assert behaviour(apart[0], stdio=True) != behaviour(apart[1], stdio=True), apart


def test_mutated_inputs_are_deterministic_from_the_seed_and_never_a_public_input():
    first = mutated_inputs(FUNCTION, seed=7, limit=5)
    assert first == mutated_inputs(FUNCTION, seed=7, limit=5) and len(first) == 5 == len(set(first))
    assert mutated_inputs(FUNCTION, seed=8, limit=5) != first
    assert not set(mutated_inputs(FUNCTION, seed=7, limit=100)) & set(public_calls(FUNCTION))
    assert all(text != STDIO["public_tests"][0]["input"] for text in mutated_inputs(STDIO, seed=1, limit=100))


def test_model_written_calls_must_call_the_entry_point():
    assert valid_call(" f(1,2) ", "f") == "f(1, 2)"
    assert valid_call("g(1)", "f") is None and valid_call("f(1", "f") is None
    assert valid_call("print(f(1))", "f") is None and valid_call("import os", "f") is None


def test_behaviour_in_the_sandbox_gives_outputs_errors_and_time_outs():
    code = "def f(n, xs):\n    if n < 0:\n        while True: pass\n    return n + len(xs)\n"
    assert probe(FUNCTION, code, ["f(3, [1])", "f(None, [])", "f(-1, [])"], timeout=0.5)[0] == \
        ("4", "<raised TypeError>", "<timeout>")
    program = "input()\nprint(sum(map(int, input().split())))\n"
    assert probe(STDIO, program, ["3\n1 5 2\n", "3\n"])[0] == ("8", "<raised EOFError>")


def test_outputs_too_long_to_show_are_told_apart_by_the_whole_value():
    """A returned value is shown cut at 300 characters and printed output at 2,000: programs that differ only
    after the cut are two behaviours, programs equal by ``==`` (ints and floats) one."""
    last_differs = ["def f(n, xs):\n    return list(range(n))\n",
                    "def f(n, xs):\n    return list(range(n - 1)) + [0]\n",
                    "def f(n, xs):\n    return [float(i) for i in range(n)]\n"]
    groups = [behaviour(probe(FUNCTION, code, ["f(200, [])"])[0][0]) for code in last_differs]
    assert groups[0] != groups[1] and groups[0] == groups[2]
    printing = ["n = int(input())\nprint(*range(n))\n", "n = int(input())\nprint(*range(n - 1), 0)\n",
                "n = int(input())\nprint(*[float(i) for i in range(n)])\n"]
    groups = [behaviour(probe(STDIO, code, ["1000\n"])[0][0], stdio=True) for code in printing]
    assert groups[0] != groups[1] and groups[0] == groups[2]
    near_the_cut = ["def f(n, xs):\n    return [1] * n\n", "def f(n, xs):\n    return [1.0] * n\n"]
    shown = [probe(FUNCTION, code, ["f(70, [])"])[0][0] for code in near_the_cut]  # 210 and 350 characters
    assert len(shown[0]) < 300 < len(shown[1]) and behaviour(shown[0]) == behaviour(shown[1])
    assert displayed(shown[1]) == shown[1][:303] and shown[1].endswith(">")  # the judge reads no fingerprint


def test_a_fingerprint_never_changes_a_verdict():
    """Printed integers over Python's 4,300-digit conversion limit, and a cyclic value returned by a program
    that raised the recursion limit: the tests pass or fail as the program's answer says."""
    from codeforest.suites import TestSuite
    from codeforest.tools.sandbox import run

    nines = "9" * 5000
    result = run("print('9' * int(input()))\n", TestSuite.stdio([{"input": "5000\n", "output": nines + "\n"}]))
    assert result.passed == 1 and result.outcomes[0].digest
    cyclic = "import sys\nsys.setrecursionlimit(10 ** 6)\ndef f(n, xs):\n    a = list(range(n))\n" \
             "    a.append(a)\n    return a\n"
    outcome = run(cyclic, TestSuite.function(["assert f(200, []) == 1"], "f")).outcomes[0]
    assert outcome.reason == "wrong answer" and outcome.digest


def test_rounding_noise_near_zero_is_zero():
    assert behaviour("1.1102230246251565e-16") == behaviour("0.0") == behaviour("0")
    assert behaviour("[1e-12, 2.0]") == behaviour("[0, 2]") and behaviour("1e-06") != behaviour("0")
    assert behaviour("1e-07", stdio=True) == behaviour("0", stdio=True)
    assert behaviour("0.000002", stdio=True) != behaviour("0", stdio=True)
    # a whole number printed as a float is that number, at any size (outputs_match calls them equal)
    assert behaviour("500000000", stdio=True) == behaviour("500000000.0", stdio=True) == behaviour("5e8", stdio=True)
    assert behaviour("500000000", stdio=True) != behaviour("500000001.0", stdio=True)
    assert behaviour("-0.0", stdio=True) == behaviour("0", stdio=True)


def test_printed_outputs_that_outputs_match_calls_equal_are_one_behaviour():
    spaced, plain = "print(5, end=' ')\n", "print(5)\n"
    assert probe(STDIO, spaced, ["\n"])[0] == probe(STDIO, plain, ["\n"])[0] == ("5",)


def test_an_assertion_the_program_raises_is_raised_not_an_empty_answer():
    code = "def f(n, xs):\n    assert n > 0\n    return n\n"
    assert probe(FUNCTION, code, ["f(1, [])", "f(-1, [])"])[0] == ("1", "<raised AssertionError>")


def test_codet_asserts_are_run_as_asserts_so_equal_values_of_other_types_pass():
    code = "def f(n, xs):\n    return n / 2\n"  # f(2, []) == 1.0, and CodeT's assert says 1
    outputs, passed = probe(FUNCTION, code, ["f(2, [])", "f(4, [])", "f(6, [])"], expected=["1", "3", None])
    assert outputs == ("1.0", "2.0", "3.0") and passed == frozenset({0})


def cand(node, outputs, *, public=True, value=0.0, asserts=()):
    return Candidate(node=node, order=int(node[1:]), value=value, public=public, outputs=tuple(outputs),
                     asserts=frozenset(asserts))


def test_agreement_takes_the_largest_group_of_public_passing_programs():
    candidates = [cand("n1", "ab"), cand("n2", "ac"), cand("n3", "ac"), cand("n4", "ac", public=False),
                  cand("n5", "ac", public=False)]
    chosen, why = select("agreement", candidates)
    assert chosen.node == "n2" and why["among"] == "public-passing" and not why["tie_broken"]
    assert [g["size"] for g in why["groups"]] == [1, 2]  # the failing programs do not vote


def test_ties_go_to_the_methods_value_then_the_earliest_and_are_recorded():
    chosen, why = select("agreement", [cand("n1", "a"), cand("n2", "b", value=0.9), cand("n3", "c", value=0.9)])
    assert chosen.node == "n2" and why["tie_broken"]
    chosen, why = select("agreement", [cand("n4", "a"), cand("n2", "b")])
    assert chosen.node == "n2" and why["tie_broken"]


def test_inputs_most_candidates_reject_are_dropped_before_grouping():
    raised = "<raised ValueError>"
    # input 1 splits n1 from n2 only because n2 raises where most others raise too: it is dropped
    candidates = [cand("n1", ["x", "ok"]), cand("n2", ["x", raised]), cand("n3", ["y", raised]),
                  cand("n4", ["x", "<timeout>"])]
    assert kept_inputs(candidates) == [0]
    chosen, why = select("agreement", candidates)
    assert chosen.node == "n1" and why["inputs"] == 1 and why["dropped_inputs"] == 1
    assert [g["nodes"] for g in why["groups"]] == [["n1", "n2", "n4"], ["n3"]]


def test_when_no_program_passes_all_candidates_vote_and_every_raising_program_is_one_group():
    raised = "<raised TypeError>"
    chosen, why = select("agreement", [cand("n1", [raised], public=False), cand("n2", [raised], public=False)])
    assert chosen.node == "n1" and why["among"] == "all" and why["inputs"] == 0  # the input was dropped
    assert output_groups([cand("n1", []), cand("n2", [])], []) == [[cand("n1", []), cand("n2", [])]]


def test_a_single_candidate_and_no_probe_inputs():
    chosen, why = select("agreement", [cand("n1", [])])
    assert chosen.node == "n1" and why["groups"] == [{"nodes": ["n1"], "size": 1, "score": 1}]
    with pytest.raises(ValueError, match="no candidate"):
        select("agreement", [])


def test_codet_weighs_groups_by_the_generated_asserts_they_pass():
    candidates = [cand("n1", "aaa", asserts={0}), cand("n2", "aaa", asserts={0}),
                  cand("n3", "bcb", asserts={0, 1, 2})]
    chosen, why = select("codet", candidates)
    assert chosen.node == "n3" and [g["score"] for g in why["groups"]] == [2, 3]
    assert select("agreement", candidates)[0].node == "n1"


def test_codet_without_a_kept_assert_falls_back_to_the_largest_group():
    """No assert written (an unreadable Tester reply, a spent budget) scores every group 0: group size decides,
    as agreement's does, not the method's value alone."""
    candidates = [cand(f"n{i}", "a", value=0.5) for i in range(1, 6)] + [cand("n9", "b", value=0.9)]
    chosen, why = select("codet", candidates)
    assert chosen.node == "n1" and [g["score"] for g in why["groups"]] == [0, 0] and not why["tie_broken"]
    tied = [cand("n1", "a", asserts={0}), cand("n2", "b", asserts={0}), cand("n3", "b", asserts={0})]
    assert select("codet", tied)[0].node == "n2"  # equal weight per member: the larger group's score is higher
    equal = [cand("n1", "aa", asserts={0, 1}), cand("n2", "bb", asserts={0}), cand("n3", "bb", asserts={0})]
    chosen, why = select("codet", equal)  # 1 x 2 against 2 x 1: equal dual scores, the larger group
    assert chosen.node == "n2" and [g["score"] for g in why["groups"]] == [2, 2] and not why["tie_broken"]


def test_distinct_programs_keep_a_program_its_node_no_longer_holds():
    from codeforest.graphs.selection import distinct_programs

    run = {"total": 2, "passed": 2, "pass_rate": 1.0}
    nodes = {"n1": {"id": "n1", "order": 1, "code": "new", "execution": run, "reward": 0.2},
             "n2": {"id": "n2", "order": 2, "code": "two", "execution": run, "reward": 0.5}}
    programs = [{"node": "n1", "code": "old", "execution": run, "reward": 0.9},
                {"node": "n2", "code": "two", "execution": run, "reward": 0.5},
                {"node": "n1", "code": "new", "execution": run, "reward": 0.2}]
    found = distinct_programs({"nodes": nodes, "programs": programs})
    assert [(p["id"], p["code"], p["value"], p["order"]) for p in found] == [
        ("n1", "old", 0.9, 0), ("n1", "new", 0.2, 1), ("n2", "two", 0.5, 2)]


def test_codet_counts_only_asserts_on_the_inputs_kept_for_grouping():
    raising = "<raised ValueError>"  # input 1 is dropped: most candidates raise on it
    candidates = [cand("n1", ("1", raising), asserts={0}), cand("n2", ("2", raising), asserts={0}),
                  cand("n3", ("3", "9"), asserts={1})]
    chosen, why = select("codet", candidates)
    assert why["dropped_inputs"] == 1 and [g["score"] for g in why["groups"]] == [1, 1, 0] and chosen.node == "n1"


def _judged(outputs: dict[str, tuple[str, ...]], values: dict[str, float] | None = None) -> list[Candidate]:
    return [Candidate(node, i, (values or {}).get(node, 0.0), True, out)
            for i, (node, out) in enumerate(outputs.items())]


def test_differential_takes_the_challenger_only_when_both_orders_agree():
    from codeforest.graphs.selection import differential

    # n1, n2 agree (the largest group, wrong on input 1); n3 alone is right; input 0 raises in n3, so input 1 is used
    candidates = _judged({"n1": ("<raised ValueError>", "5"), "n2": ("<raised ValueError>", "5"),
                          "n3": ("0", "6"), "n4": ("0", "6"), "n5": ("1", "7")})
    asked = []

    def fair(index, first, second):  # knows the right outputs: 0 on input 0, 6 on input 1
        asked.append((index, first, second))
        return "first" if first in ("0", "6") else "second" if second in ("0", "6") else None

    chosen, why = differential(candidates, fair, top=3)
    assert chosen.node == "n3" and [c["verdict"] for c in why["comparisons"]] == ["challenger", "leader"]
    assert asked[:2] == [(1, "5", "6"), (1, "6", "5")] and why["abstention_rate"] == 0.0  # both orders, in turn
    assert why["tie_broken"] is True  # two groups of two: the leader came from the tie-break

    def positional(index, first, second):  # the 1.5B model's habit: always the one shown first
        return "first"

    chosen, why = differential(candidates, positional, top=3)
    assert chosen.node == "n1" and why["abstained"] == 2 and why["abstention_rate"] == 1.0

    def recency(index, first, second):  # the opposite habit: always the one shown second
        return "second"

    chosen, why = differential(candidates, recency, top=3)
    assert chosen.node == "n1" and why["abstained"] == 2
    assert [c["verdict"] for c in why["comparisons"]] == ["abstained", "abstained"]
    chosen, why = differential(candidates, fair, top=2)  # only the two largest groups meet
    assert chosen.node == "n3" and len(why["comparisons"]) == 1


def test_a_judge_that_cannot_be_asked_is_no_abstention():
    from codeforest.graphs.selection import NOT_ASKED, differential

    candidates = _judged({"n1": ("5",), "n2": ("5",), "n3": ("6",)})
    chosen, why = differential(candidates, lambda *_: NOT_ASKED, top=3)
    assert chosen.node == "n1" and [c["verdict"] for c in why["comparisons"]] == ["not judged"]
    assert why["abstained"] == 0 and why["abstention_rate"] is None  # nothing was judged: no rate


def test_the_judge_gets_an_input_whose_shown_outputs_differ():
    """Input 0 separates n1 from n3 only after the shown text's cut (same text, other fingerprints); input 1
    shows the difference: the judge is asked on input 1."""
    from codeforest.graphs.selection import differential, separating_input

    long = "[" + ", ".join(["7"] * 80) + ", ..."
    outputs = {"n1": (long + " #a", "1"), "n2": (long + " #a", "1"), "n3": (long + " #b", "2")}
    candidates = [Candidate(node, i, 0.0, True, out, shown=(long, out[1])) for i, (node, out) in
                  enumerate(outputs.items())]
    assert separating_input(candidates[0], candidates[2], [0, 1]) == 1
    seen = []
    differential(candidates, lambda i, a, b: seen.append((i, a, b)) or "first", top=3)
    assert seen == [(1, "1", "2"), (1, "2", "1")]
    # when no input shows a difference, one still separates them
    assert separating_input(candidates[0], candidates[2], [0]) == 0


def test_the_judge_sees_the_outputs_as_given_and_groups_follow_the_tests():
    from codeforest.graphs.selection import differential

    shown = {"n1": ("3",), "n2": ("3.0",), "n3": ("4",)}
    candidates = [Candidate(node, i, 0.0, True, ("3",) if node != "n3" else ("4",), shown=out)
                  for i, (node, out) in enumerate(shown.items())]
    seen = []
    chosen, why = differential(candidates, lambda i, a, b: seen.append((a, b)) or "first", top=3)
    assert [g["nodes"] for g in why["groups"]] == [["n1", "n2"], ["n3"]] and seen == [("3", "4"), ("4", "3")]


def test_differential_with_one_group_asks_nothing():
    from codeforest.graphs.selection import differential

    def never(*_):
        raise AssertionError("no comparison to make")

    chosen, why = differential(_judged({"n1": ("1",), "n2": ("1",)}), never, top=3)
    assert chosen.node == "n1" and why["comparisons"] == [] and why["abstention_rate"] is None


def test_the_judge_reads_the_last_answer_line():
    from codeforest.agents.judge import parse_choice

    assert parse_choice("A looks odd.\nAnswer: B") == "second" and parse_choice("**Answer:** A") == "first"
    assert parse_choice("Output A is right") is None and parse_choice("Answer: A\n...\nAnswer: B") == "second"


def test_an_expected_value_that_is_no_literal_drops_only_its_line():
    from codeforest.agents.tester import parse_calls

    text = "assert f(1, []) == {[1]: 2}\nassert f(2, []) == 3\n"
    assert parse_calls(text, "f", True) == [{"input": "f(2, [])", "expected": "3"}]


def test_calls_written_as_doctests_or_bare_comparisons_are_read():
    """The HumanEval prompts show their examples as doctests, and a model may copy that style."""
    from codeforest.agents.tester import parse_calls

    assert [c["input"] for c in parse_calls(">>> f([1, 2])\n3\n1. >>> f([])\n0", "f", False)] == ["f([1, 2])", "f([])"]
    assert parse_calls(">>> assert f([]) == 0\nf([1]) == 1\n`f([2])`", "f", True) == [
        {"input": "f([])", "expected": "0"}, {"input": "f([1])", "expected": "1"}]


def test_within_the_chosen_group_the_best_value_wins_then_the_earliest():
    # guards _pick: inside the chosen group the method's value decides before creation order
    from codeforest.graphs.selection import differential

    candidates = [cand("n1", "a", value=0.2), cand("n2", "a", value=0.7), cand("n3", "b", value=0.9)]
    chosen, why = select("agreement", candidates)  # group a (n1, n2) outvotes b; in it n2 has the higher value
    assert chosen.node == "n2" and [g["nodes"] for g in why["groups"]] == [["n1", "n2"], ["n3"]]
    assert not why["tie_broken"]
    assert select("codet", candidates)[0].node == "n2"  # no assert kept: scores 0, the larger group, same pick
    assert select("agreement", [cand("n1", "a", value=0.5), cand("n2", "a", value=0.5)])[0].node == "n1"

    def never(*_):
        raise AssertionError("one group: nothing to judge")

    chosen, _ = differential(_judged({"n1": ("1",), "n2": ("1",)}, {"n1": 0.1, "n2": 0.8}), never, top=3)
    assert chosen.node == "n2"


def test_equal_sized_groups_are_ranked_by_their_best_value_then_their_earliest_program():
    # guards ranked_groups' value tie-break: of two equal-sized groups the one holding the higher value leads
    from codeforest.graphs.selection import differential, ranked_groups

    candidates = _judged({"n1": ("1",), "n2": ("1",), "n3": ("2",), "n4": ("2",), "n5": ("3",), "n6": ("4",)},
                         {"n1": 0.5, "n4": 0.9})
    groups = output_groups(candidates, [0])  # [n1 n2] best 0.5, [n3 n4] best 0.9, [n5] 0.0, [n6] 0.0
    assert [[c.node for c in g] for g in ranked_groups(groups)] == [["n3", "n4"], ["n1", "n2"], ["n5"], ["n6"]]

    def positional(index, first, second):  # abstains on every pair: the leader stays
        return "first"

    chosen, why = differential(candidates, positional, top=3)
    assert chosen.node == "n4" and why["tie_broken"] is True
    assert [(c["leader"], c["challenger"]) for c in why["comparisons"]] == [("n4", "n1"), ("n4", "n5")]
    assert differential(candidates, positional, top=1)[0].node == "n4"  # the leader alone


def test_an_input_half_the_candidates_reject_is_kept():
    # guards rejected's strict majority: 2 of 4 raising or timing out is no majority (3 of 4 is)
    from codeforest.tools.probes import rejected

    assert not rejected(["1", "2", "<raised ValueError>", "<timeout>"])
    assert rejected(["1", "<raised ValueError>", "<raised ValueError>", "<timeout>"])
    assert not rejected(["1", "<timeout>"]) and rejected(["<timeout>"])
    candidates = [cand("n1", ["1"]), cand("n2", ["1"]), cand("n3", ["<raised ValueError>"]),
                  cand("n4", ["<timeout>"])]
    assert kept_inputs(candidates) == [0]
    chosen, why = select("agreement", candidates)
    assert chosen.node == "n1" and why["inputs"] == 1 and why["dropped_inputs"] == 0
    assert [g["size"] for g in why["groups"]] == [2, 1, 1]


def test_a_nested_call_is_read_as_its_outermost_call_only():
    # guards public_calls' break: one call per assert, the outermost; the inner f(1) is no public input of its own
    problem = {**FUNCTION, "public_tests": ["assert f(f(1)) == 2", "assert f(2) == 4"]}
    assert public_calls(problem) == ["f(f(1))", "f(2)"]


def test_an_input_without_an_expected_value_is_no_passed_assert():
    # guards probe: expected None means no expected output is known, so a None-returning program passes nothing
    code = "def f(n, xs):\n    return None\n"
    outputs, passed = probe(FUNCTION, code, ["f(1, [])", "f(2, [])"], expected=[None, "None"])
    assert outputs == ("None", "None") and passed == frozenset({1})  # only the assert written `== None`
    assert probe(FUNCTION, code, ["f(1, [])"], expected=[None])[1] == frozenset()
    assert probe(FUNCTION, code, ["f(1, [])"])[1] == frozenset()  # no expected list at all
    silent = "input()\n"  # prints nothing, as the empty placeholder output of a stdio input says
    assert probe(STDIO, silent, ["1\n"], expected=[None]) == (("",), frozenset())


def test_stdin_the_tester_fences_inside_its_tags_is_read_without_the_fences():
    from codeforest.agents.tester import parse_stdin

    reply = "<input>\n```\n5\n1 1 0 1 1\n```\n</input>\n<output>\n```text\n3\n```\n</output>\n<input>\n2\n</input>"
    assert parse_stdin(reply, False) == [{"input": "5\n1 1 0 1 1\n", "expected": None},
                                         {"input": "2\n", "expected": None}]
    assert parse_stdin(reply, True) == [{"input": "5\n1 1 0 1 1\n", "expected": "3"}]
