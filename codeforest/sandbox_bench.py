"""``codeforest bench-sandbox``: what the sandbox costs over a bare interpreter, per program."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from codeforest.suites import TestSuite
from codeforest.tools.sandbox import LocalSandbox, bwrap_available

PROGRAM = "def add(a, b):\n    return a + b\n"
TESTS = [f"assert add({i}, 1) == {i + 1}" for i in range(5)]


def _median_seconds(action: Callable[[], object], repeat: int) -> float:
    action()  # warm the page cache once
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_sandbox(repeat: int = 20) -> dict:
    """Median wall time of a 5-test program: bare ``python -c``, the local sandbox with and without bwrap."""
    suite = TestSuite.function(TESTS, "add")
    bare_source = PROGRAM + "\n".join(TESTS)

    def bare() -> None:
        subprocess.run([sys.executable, "-c", bare_source], check=True)

    def sandboxed(sandbox: LocalSandbox) -> Callable[[], None]:
        def action() -> None:
            if not sandbox.run(PROGRAM, suite).all_passed:
                raise RuntimeError("the benchmark program failed in the sandbox")
        return action

    rows = {"bare python -c": _median_seconds(bare, repeat)}
    rows["sandbox, rlimits only"] = _median_seconds(sandboxed(LocalSandbox(isolation="none")), repeat)
    if bwrap_available():
        rows["sandbox, bwrap + rlimits"] = _median_seconds(sandboxed(LocalSandbox(isolation="bwrap")), repeat)
    base = rows["bare python -c"]
    return {"repeat": repeat, "tests": len(TESTS),
            "rows": [{"runner": name, "median_ms": round(s * 1000, 1), "ratio": round(s / base, 2)}
                     for name, s in rows.items()]}
