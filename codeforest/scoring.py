"""Scoring a returned program on private tests: the harness's job, after the graph has returned."""

from __future__ import annotations

from dataclasses import dataclass, replace

from codeforest.problems import Task, check_asserts, without_public
from codeforest.suites import TestSuite
from codeforest.tools.sandbox import run
from codeforest.tools.testing import printed

FINAL_TIMEOUT_S = 10.0  # per private test; CodeTree's released code uses 10 s for the final evaluation
MIN_ASSERT_TIMEOUT_S = 1.0  # an assert's share of a check's time when it runs alone, for the pass rate


@dataclass
class PrivateScore:
    """Whether the program passed every private test, and the fraction it passed."""

    passed: bool | None
    pass_rate: float | None
    total: int


def private_asserts(task: Task) -> TestSuite | None:
    """A function task's one private ``check`` as one test per assert (for the pass rate); None if not splittable.

    Derived when scored rather than when loaded: most programs pass or fail whole, and loading stays cheap.
    """
    suite = task.private_tests
    if suite is None or suite.kind != "function" or len(suite) != 1:
        return None
    copies = check_asserts(suite.tests[0])
    return replace(suite, tests=tuple(copies)) if copies else None


def held_out(task: Task) -> Task | None:
    """The task with only the private tests its public ones do not repeat (labels the public feedback cannot give
    away); None when none is left or it has no private tests."""
    suite, problem = task.private_tests, task.problem
    if suite is None:
        return None
    if suite.kind == "stdio":
        shown = {_stdio_key(t) for t in problem["public_tests"]}
        kept = TestSuite.stdio([t for t in suite.tests if _stdio_key(t) not in shown])
    else:
        tests = [without_public(t, problem["public_tests"], suite.entry_point) for t in suite.tests]
        kept = replace(suite, tests=tuple(t for t in tests if t is not None), timeouts=())
    return replace(task, private_tests=kept) if len(kept) else None


def _stdio_key(test: dict) -> tuple[str, str]:
    return printed(test["input"]), printed(test["output"])  # line-end spaces aside, as outputs are compared


def private_test_count(task: Task) -> int:
    """How many private tests a task's pass rate counts: a function check's asserts, else its tests."""
    return len(private_asserts(task) or task.private_tests or ())


def score_private(task: Task, code: str, *, backend: str | None = None,
                  timeout: float = FINAL_TIMEOUT_S) -> PrivateScore:
    """Run ``code`` on the task's private tests in the sandbox; unknown when it has none.

    Whether it passed comes from the tests as given; a function test whose asserts run one by one
    (``private_asserts``) gives the pass rate, asked only when the whole test fails: within the whole test's
    time (each assert gets an equal share, at least a second) and below 1 (every assert passing alone while the
    whole fails, e.g. by time, is not a pass).
    """
    if task.private_tests is None or len(task.private_tests) == 0:
        return PrivateScore(passed=None, pass_rate=None, total=0)
    result = run(code, task.private_tests, timeout=timeout, backend=backend, scoring=True)
    asserts = private_asserts(task)
    if asserts is None:
        return PrivateScore(passed=result.all_passed, pass_rate=result.pass_rate, total=result.total)
    total = len(asserts)
    if result.all_passed:
        return PrivateScore(passed=True, pass_rate=1.0, total=total)
    share = max(MIN_ASSERT_TIMEOUT_S, timeout / total)
    one_by_one = run(code, asserts, timeout=share, backend=backend, scoring=True)
    return PrivateScore(passed=False, pass_rate=min(one_by_one.pass_rate, (total - 1) / total), total=total)


def score_plus(task: Task, code: str, *, backend: str | None = None) -> PrivateScore | None:
    """EvalPlus's "plus" verdict: ``code`` on the base and plus inputs together (each with its own time limit);
    None for a task without plus tests."""
    if task.plus_tests is None:
        return None
    result = run(code, task.plus_tests, timeout=FINAL_TIMEOUT_S, backend=backend, scoring=True)
    return PrivateScore(passed=result.all_passed, pass_rate=result.pass_rate, total=result.total)
