"""Block-level traces of buggy programs, function-style and stdin/stdout, and their fallbacks."""

from __future__ import annotations

import re

from codeforest.suites import TestSuite
from codeforest.tools.sandbox import run
from codeforest.tools.tracing import basic_blocks, failing_test_trace, render_trace, trace_test

OFF_BY_ONE = """def count_up(n):
    total = 0
    for k in range(n):
        total += k
    return total
"""
CLOSE = """def has_close_elements(numbers, threshold):
    for i in range(len(numbers)):
        for j in range(i + 1, len(numbers)):
            d = numbers[i] - numbers[j]
            if d < threshold:
                return True
    return False
"""


def blocks_of(text: str) -> list[str]:
    return re.findall(r"^\[BLOCK-(\d+)\]$", text, re.M)


def test_basic_blocks_split_at_branches_and_loops():
    blocks = basic_blocks(CLOSE)
    assert blocks[2] != blocks[3], "each loop header is a block of its own"
    assert blocks[4] == blocks[5], "a statement and the if-test after it share a block"
    assert blocks[6] != blocks[5] and blocks[7] != blocks[6]


def test_function_trace_shows_values_before_and_after_each_block():
    suite = TestSuite.function(["assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False"], "has_close_elements")
    result = run(CLOSE, suite)
    text, index = failing_test_trace(CLOSE, suite, result)
    assert index == 0
    assert text.splitlines()[:4] == ["[BLOCK-0]", "# numbers=[1.0, 2.0, 3.0] threshold=0.5",
                                     "for i in range(len(numbers)):", "# numbers=[1.0, 2.0, 3.0] threshold=0.5 i=0"]
    assert "d = numbers[i] - numbers[j]\nif d < threshold:" in text  # the bug: d is negative
    assert "d=-1.0" in text and "_ret=True" in text and "AssertionError" in text


def test_long_traces_keep_the_first_and_last_five_blocks():
    suite = TestSuite.function(["assert count_up(6) == 21"], "count_up")
    trace = trace_test(OFF_BY_ONE, suite, 0)
    assert len(trace.steps) > 10
    text = render_trace(trace, OFF_BY_ONE)
    numbers = [int(n) for n in blocks_of(text)]
    assert numbers == [0, 1, 2, 3, 4] + list(range(len(trace.steps) - 5, len(trace.steps)))
    assert f"({len(trace.steps) - 10} blocks omitted)" in text
    assert text.endswith("_ret=15\n# the execution raised AssertionError")


def test_long_values_are_elided():
    code = "def f(s):\n    t = s * 2\n    return len(t)\n"
    trace = trace_test(code, TestSuite.function(["assert f('ab' * 100) == 1"], "f"), 0)
    text = render_trace(trace, code)
    long_value = re.search(r"t='(a[^ ]*)'", text).group(1)
    assert "..." in long_value and len(long_value) <= 103


def test_object_values_show_no_memory_address_so_a_rerun_renders_the_same_trace():
    code = "class Box:\n    pass\n\ndef f(xs):\n    box = Box()\n    pairs = [i for i, x in enumerate(xs)]\n" \
        "    return 0\n"
    suite = TestSuite.function(["assert f([3, 4]) == 1"], "f")
    texts = [render_trace(trace_test(code, suite, 0), code) for _ in range(2)]
    assert "box=<__solution__.Box object> pairs=[0, 1]" in texts[0] and ".0=<enumerate object> i=1 x=4" in texts[0]
    assert "0x" not in texts[0]
    assert texts[0] == texts[1]


def test_stdio_program_trace():
    code = "n = int(input())\nif n > 2:\n    print(n - 1)\nelse:\n    print(n)\n"
    suite = TestSuite.stdio([{"input": "5\n", "output": "5\n"}])
    text, index = failing_test_trace(code, suite, run(code, suite))
    assert index == 0 and blocks_of(text) == ["0", "1"]
    assert "# n=5" in text and "print(n - 1)" in text


def test_trace_that_times_out_falls_back_to_plain_feedback():
    code = "def f(x):\n    while True:\n        x += 1\n"
    suite = TestSuite.function(["assert f(1) == 2"], "f")
    result = run(code, suite, timeout=0.5)
    text, index = failing_test_trace(code, suite, result, timeout=0.5)
    assert index is None and text == "The assertion is assert f(1) == 2 but the real execution output is a time-out"


def test_wrong_output_fallback_names_expected_and_actual():
    code = "print(int(input()) + 1)\n"
    suite = TestSuite.stdio([{"input": "1\n", "output": "3\n"}])
    result = run(code, suite)
    text, _ = failing_test_trace("this is not python(", suite, result)
    assert text == "For input '1\\n' the expected output is '3\\n' but the real output is '2\\n'"


def test_recursive_calls_are_traced_per_frame():
    code = "def fact(n):\n    if n <= 1:\n        return 0\n    return n * fact(n - 1)\n"
    trace = trace_test(code, TestSuite.function(["assert fact(3) == 6"], "fact"), 0)
    returns = [s.returned for s in trace.steps if s.returned is not None]
    assert returns == ["0", "0", "0"]
