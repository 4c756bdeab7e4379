"""The trusted test process and the program's process: what crosses between them, and what honest programs of the
benchmarks need from it (classes built by the tests, ``Solution().method``, exceptions a test expects, prompt
helpers)."""

from __future__ import annotations

import pytest

from codeforest.problems import prompt_helpers, public_suite
from codeforest.suites import TestSuite
from codeforest.tools.sandbox import LocalSandbox


@pytest.fixture(scope="module")
def sandbox():
    return LocalSandbox(isolation="bwrap", bwrap="bundled")


def outcomes(sandbox, program, tests, entry="f", support="", timeout=5.0):
    result = sandbox.run(program, TestSuite.function(tests, entry, support=support), timeout=timeout)
    return result.outcomes


def test_plain_values_keep_their_types(sandbox):
    program = ("import numpy as np\ndef f(kind):\n    return {'tuple': (1, 2), 'big': 2 ** 100, 'nan': float('nan'),"
               " 'bytes': b'\\x00a', 'set': {1, 2}, 'dict': {(1, 2): [3.5, None]}, 'np': np.int64(7),"
               " 'npf': np.float64(0.5)}[kind]\n")
    tests = ["assert f('tuple') == (1, 2)", "assert f('tuple') == [1, 2]", "assert f('big') == 2 ** 100",
             "assert f('nan') != f('nan')", "assert f('bytes') == b'\\x00a'", "assert f('set') == {2, 1}",
             "assert f('dict') == {(1, 2): [3.5, None]}", "assert f('np') == 7 and type(f('np')) is int",
             "assert f('npf') == 0.5"]
    assert [o.passed for o in outcomes(sandbox, program, tests)] == [True, False, True, True, True, True, True,
                                                                     True, True]


def test_an_object_that_is_not_plain_data_is_a_handle_that_equals_nothing(sandbox):
    program = ("class Box:\n    def __init__(self, v):\n        self.v = v\n    def __eq__(self, other):\n"
               "        return True\n    def __repr__(self):\n        return f'Box({self.v})'\n"
               "def f():\n    return Box(3)\ndef g():\n    return (i for i in range(3))\n")
    tests = ["assert f() == 3", "assert f().v == 3", "assert g() == [0, 1, 2]", "assert list(g()) == [0, 1, 2]"]
    first, attribute, generator, iterated = outcomes(sandbox, program, tests)
    assert not first.passed and first.actual == "Box(3)" and "not plain data" in first.error
    assert first.reason == "wrong answer"
    assert attribute.passed and iterated.passed
    assert not generator.passed and generator.actual == "<generator object g.<locals>.<genexpr>>"


def test_tests_build_and_link_the_programs_objects(sandbox):
    """MBPP/367's test builds a tree of the program's ``Node``s, setting their attributes, and passes its root."""
    program = ("class Node:\n    def __init__(self, data):\n        self.data = data\n        self.left = None\n"
               "        self.right = None\n"
               "def height(node):\n    return 0 if node is None else 1 + max(height(node.left), height(node.right))\n")
    test = ("root = Node(1)\nroot.left = Node(2)\nroot.left.left = Node(3)\nroot.right = Node(4)\n"
            "assert height(root) == 3\nassert height(root.right) == 1\nassert root.left.data == 2")
    assert outcomes(sandbox, program, [test], entry="height")[0].passed


def test_a_solution_class_method_is_called_through_its_instance(sandbox):
    program = "class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]\n"
    assert outcomes(sandbox, program, ["assert Solution().twoSum([2, 7], 9) == [0, 1]"], entry="twoSum")[0].passed


def test_an_exception_the_test_expects_is_caught_by_its_type(sandbox):
    program = "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n"
    test = "try:\n    f(-1)\n    assert False\nexcept ValueError as exc:\n    assert 'negative' in str(exc)"
    raising = outcomes(sandbox, program, [test, "assert f(-1) == 1"])
    assert raising[0].passed
    assert raising[1].error == "ValueError: negative" and "line 3, in f: raise ValueError('negative')" in \
        raising[1].traceback and "line 1, in <module>: assert f(-1) == 1" in raising[1].traceback


def test_the_tests_names_come_before_the_programs(sandbox):
    """A program's own ``sorted`` or patched built-ins do not reach the test: both sides of the comparison are the
    test's."""
    program = ("import builtins\nbuiltins.AssertionError = ZeroDivisionError\n"
               "def sorted(x):\n    return 'same'\ndef f(x):\n    return x\n")
    first, = outcomes(sandbox, program, ["assert sorted(f([3, 1])) == sorted([1, 3, 4])"])
    assert not first.passed and first.reason == "wrong answer" and first.error == "AssertionError"


def test_a_prompt_helper_comes_from_the_prompt_never_from_the_program():
    """HumanEval/38's check calls ``encode_cyclic``: the trusted process takes it from the prompt, so a program
    that leaves it out (or defines its own) is judged by the dataset's."""
    prompt = ("def encode(s: str):\n    return s[::-1]\n\n\ndef decode(s: str):\n    \"\"\"Undo encode.\"\"\"\n")
    helpers = prompt_helpers(prompt, "decode")
    assert "def encode" in helpers and "def decode" not in helpers
    problem = {"id": "H/1", "prompt": prompt, "kind": "function", "entry_point": "decode",
               "public_tests": ["assert decode(encode('abc')) == 'abc'"]}
    suite = public_suite(problem)
    sandbox = LocalSandbox(isolation="bwrap", bwrap="bundled")
    assert sandbox.run("def decode(s):\n    return s[::-1]\n", suite).all_passed
    cheat = "def encode(s):\n    return s\ndef decode(s):\n    return s\n"  # its own encode would make it pass
    assert not sandbox.run(cheat, suite).all_passed
    assert prompt_helpers("Write a function.\nassert f(1) == 2", "f") == ""


def test_a_tests_time_is_shared_by_its_calls_and_a_hung_call_is_killed(sandbox):
    program = ("import signal, time\ndef slow():\n    time.sleep(0.6)\n    return 1\n"
               "def stubborn():\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n")
    tests = ["assert slow() + slow() == 2", "assert stubborn() == 1", "assert slow() == 1"]
    shared, stubborn, after = outcomes(sandbox, program, tests, entry="slow", timeout=1.0)
    assert shared.timed_out and shared.reason == "timeout"
    assert stubborn.timed_out and stubborn.error == "Timed out after 1 s (killed)"
    assert after.passed  # in a fresh process
