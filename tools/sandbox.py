"""Run untrusted, model-written programs against tests, outside the framework's own process.

``run(code, tests, timeout=...)`` is the single seam every graph uses. The local backend starts a
fresh ``python -I`` child per program in a scratch directory, with a scrubbed environment,
rlimits set by the child on itself before any untrusted code runs, and a wall-clock watchdog that
kills the child's whole process group. All tests of one program share one process; a test that
hangs or kills the process costs only itself: the remaining tests run in a fresh process.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from typing import Protocol

from codeforest.tools.testing import ExecutionResult, TestOutcome, TestSuite, outputs_match

RESULT_BYTES_LIMIT = 64 * 1024 * 1024  # what the parent will read from one child, at most
STARTUP_GRACE_S = 3.0  # interpreter start-up and program definition, on top of the first test's limit


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandboxed program."""

    memory_mb: int = 2048
    file_mb: int = 16
    processes: int = 64
    output_chars: int = 1_000_000


class Sandbox(Protocol):
    """A place where untrusted code runs."""

    def run(self, code: str, tests: TestSuite, *, timeout: float = 5.0) -> ExecutionResult: ...


class LocalSandbox:
    """Fresh subprocess per program, rlimits, scrubbed environment, process-group kill."""

    def __init__(self, limits: Limits | None = None, python: str | None = None):
        self.limits = limits or Limits()
        self.python = python or sys.executable
        self.runner = str(resources.files("codeforest.tools") / "_runner.py")

    def run(self, code: str, tests: TestSuite, *, timeout: float = 5.0) -> ExecutionResult:
        """Run ``code`` against every test in ``tests``; ``timeout`` is per test, in seconds."""
        started = time.monotonic()
        total = len(tests)
        outcomes: list[TestOutcome | None] = [None] * total
        error = None
        workdir = tempfile.mkdtemp(prefix="codeforest-run-")
        try:
            start = 0
            while start < total:
                lines, crash = self._run_child(code, tests, start, timeout, workdir)
                setup = next((ln for ln in lines if "setup_error" in ln), None)
                if setup:
                    error = setup["setup_error"]
                    for i in range(start, total):
                        outcomes[i] = _failed(tests, i, error, setup.get("reason", "error"))
                    break
                for line in lines:
                    outcomes[line["i"]] = _outcome(tests, line)
                nxt = next((i for i in range(start, total) if outcomes[i] is None), total)
                if nxt < total:  # the child died or hung inside test `nxt`
                    outcomes[nxt] = _failed(tests, nxt, crash or "The program ended unexpectedly",
                                            "timeout" if crash and "Timed out" in crash else "crash",
                                            timed_out=bool(crash and "Timed out" in crash))
                start = nxt + 1
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        final = [o for o in outcomes if o is not None]
        passed = sum(o.passed for o in final)
        return ExecutionResult(passed=passed, total=total, outcomes=final,
                               wall_s=time.monotonic() - started, error=error)

    def _payload(self, code: str, tests: TestSuite, start: int, timeout: float) -> bytes:
        limits = self.limits
        return json.dumps({
            "code": code,
            "kind": tests.kind,
            "tests": list(tests.tests),
            "start": start,
            "timeout": timeout,
            "output_limit": limits.output_chars,
            "limits": {
                "memory_bytes": limits.memory_mb * 1024 * 1024,
                "cpu_seconds": int(timeout * (len(tests) - start) + STARTUP_GRACE_S) + 1,
                "file_bytes": limits.file_mb * 1024 * 1024,
                "processes": limits.processes,
            },
        }).encode()

    def _run_child(self, code, tests, start, timeout, workdir) -> tuple[list[dict], str | None]:
        """Run tests[start:] in one child; return the result lines and why it stopped early, if it did."""
        proc = subprocess.Popen(
            [self.python, "-I", self.runner],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=workdir, env=scrubbed_env(workdir), start_new_session=True,
        )
        try:
            proc.stdin.write(self._payload(code, tests, start, timeout))
            proc.stdin.close()
        except BrokenPipeError:
            pass
        lines: list[dict] = []
        why = None
        buffer = b""
        received = 0
        deadline = time.monotonic() + timeout + STARTUP_GRACE_S
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    why = f"Timed out after {timeout:g} s (killed)"
                    break
                if not sel.select(remaining):
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                received += len(chunk)
                if received > RESULT_BYTES_LIMIT:
                    why = "Output limit exceeded (killed)"
                    break
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                for raw in complete:
                    try:
                        lines.append(json.loads(raw))
                    except ValueError:
                        continue
                    deadline = time.monotonic() + timeout + 1.0  # progress: the next test gets its own clock
        if why is None:  # the results pipe closed: let the child finish exiting before the group is killed
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        _kill_group(proc)
        proc.stdout.close()
        if why is None and proc.returncode and proc.returncode < 0:
            why = f"Killed by signal {signal.Signals(-proc.returncode).name}"
            if -proc.returncode == signal.SIGXCPU:
                why = "CPU time limit exceeded"
        elif why is None and proc.returncode:
            why = f"The program exited with status {proc.returncode}"
        return lines, why


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def scrubbed_env(workdir: str) -> dict[str, str]:
    """The whole environment a child sees: no API keys, no user paths."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


def _outcome(tests: TestSuite, line: dict) -> TestOutcome:
    passed = bool(line.get("passed"))
    reason = line.get("reason")
    if tests.kind == "stdio" and "output_full" in line:
        passed = outputs_match(line["output_full"], line["expected"])
        reason = None if passed else "wrong answer"
    if line.get("output_dropped") and not passed:
        reason = reason or "output limit"
    return TestOutcome(
        test=line["test"], passed=passed, expected=line.get("expected"), actual=line.get("actual"),
        error=line.get("error"), traceback=line.get("traceback"), timed_out=bool(line.get("timed_out")),
        reason=None if passed else reason,
    )


def _failed(tests: TestSuite, i: int, error: str, reason: str, timed_out: bool = False) -> TestOutcome:
    case = tests.tests[i]
    if tests.kind == "stdio":
        return TestOutcome(test=case["input"], passed=False, expected=case["output"], error=error,
                           reason=reason, timed_out=timed_out)
    return TestOutcome(test=case, passed=False, error=error, reason=reason, timed_out=timed_out)


BACKENDS = {"local": LocalSandbox}


def get_sandbox(backend: str | None = None) -> Sandbox:
    """The sandbox for a backend name (default: ``$CODEFOREST_SANDBOX`` or ``local``)."""
    name = backend or os.environ.get("CODEFOREST_SANDBOX", "local")
    if name not in BACKENDS:
        raise ValueError(f"Unknown sandbox backend {name!r}; choose one of {sorted(BACKENDS)}")
    return BACKENDS[name]()


def run(code: str, tests: TestSuite, *, timeout: float = 5.0, backend: str | None = None) -> ExecutionResult:
    """Run a program against a test suite in the chosen sandbox backend."""
    return get_sandbox(backend).run(code, tests, timeout=timeout)


def run_public_tests(problem, code: str, *, timeout: float = 5.0, backend: str | None = None) -> ExecutionResult:
    """Run a program against a problem's public tests (the only tests a graph may use)."""
    from codeforest.problems import public_suite

    return run(code, public_suite(problem), timeout=timeout, backend=backend)
