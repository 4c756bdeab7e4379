"""Scoring a returned program on private tests: the harness's job, after the graph has returned."""

from __future__ import annotations

from dataclasses import dataclass

from codeforest.problems import Task
from codeforest.tools.sandbox import run

FINAL_TIMEOUT_S = 10.0  # per private test; CodeTree's released code uses 10 s for the final evaluation
MIN_ASSERT_TIMEOUT_S = 1.0  # an assert's share of a check's time when it runs alone, for the pass rate


@dataclass
class PrivateScore:
    """Whether the program passed every private test, and the fraction it passed."""

    passed: bool | None
    pass_rate: float | None
    total: int


def score_private(task: Task, code: str, *, backend: str | None = None,
                  timeout: float = FINAL_TIMEOUT_S) -> PrivateScore:
    """Run ``code`` on the task's private tests in the sandbox; unknown when it has none.

    Whether it passed comes from the tests as given; a function test whose asserts run one by one
    (``task.private_asserts``) gives the pass rate, asked only when the whole test fails: within the whole test's
    time (each assert gets an equal share, at least a second) and below 1 (every assert passing alone while the
    whole fails, e.g. by time, is not a pass).
    """
    if task.private_tests is None or len(task.private_tests) == 0:
        return PrivateScore(passed=None, pass_rate=None, total=0)
    result = run(code, task.private_tests, timeout=timeout, backend=backend)
    if task.private_asserts is None:
        return PrivateScore(passed=result.all_passed, pass_rate=result.pass_rate, total=result.total)
    total = len(task.private_asserts)
    if result.all_passed:
        return PrivateScore(passed=True, pass_rate=1.0, total=total)
    share = max(MIN_ASSERT_TIMEOUT_S, timeout / total)
    one_by_one = run(code, task.private_asserts, timeout=share, backend=backend)
    return PrivateScore(passed=False, pass_rate=min(one_by_one.pass_rate, (total - 1) / total), total=total)
