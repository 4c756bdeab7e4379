"""Scoring a returned program on private tests: the harness's job, after the graph has returned."""

from __future__ import annotations

from dataclasses import dataclass

from codeforest.problems import Task
from codeforest.tools.sandbox import run

FINAL_TIMEOUT_S = 10.0  # per private test; CodeTree's released code uses 10 s for the final evaluation


@dataclass
class PrivateScore:
    """Whether the program passed every private test, and the fraction it passed."""

    passed: bool | None
    pass_rate: float | None
    total: int


def score_private(task: Task, code: str, *, backend: str | None = None,
                  timeout: float = FINAL_TIMEOUT_S) -> PrivateScore:
    """Run ``code`` on the task's private tests in the sandbox; unknown when it has none."""
    if task.private_tests is None or len(task.private_tests) == 0:
        return PrivateScore(passed=None, pass_rate=None, total=0)
    result = run(code, task.private_tests, timeout=timeout, backend=backend)
    return PrivateScore(passed=result.all_passed, pass_rate=result.pass_rate, total=result.total)
