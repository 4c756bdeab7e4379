"""The E2B backend: the same runner, the same results, in an E2B Code Interpreter sandbox.

One remote sandbox, without internet access, is created on first use and reused (the harness's scoring on
hidden tests gets one of its own, see ``sandbox.get_sandbox``); every program still runs in a fresh process
inside it (started by a small driver executed through ``run_code``), in a scratch folder the driver removes
afterwards, with the runner's trusted test process, rlimits, per-test clocks and guardian (which kills whatever
the program left running). Service failures (no key, authentication, quota, time-outs) raise
:class:`SandboxServiceError` with a message that says what to do.
"""

from __future__ import annotations

import base64
import json
import os
import threading

from codeforest.tools import install_hint
from codeforest.tools.sandbox import RUNNER_SOURCE, STARTUP_GRACE_S, ChildSandbox, Limits

MARKER = "__codeforest_result__"

DRIVER = """
import base64, json, os, shutil, signal, subprocess, sys, tempfile
_dir = tempfile.mkdtemp(prefix="codeforest-run-")
try:
    with open(os.path.join(_dir, "_runner.py"), "wb") as _f:
        _f.write(base64.b64decode({runner!r}))
    _env = {{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": _dir, "TMPDIR": _dir, "LANG": "C.UTF-8"}}
    if os.getuid() == 0:  # the runner starts the program as nobody, in this folder
        os.chown(_dir, 65534, 65534)
    _p = subprocess.Popen([sys.executable, "-I", os.path.join(_dir, "_runner.py"), "--guard"], cwd=_dir, env=_env,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          start_new_session=True)
    try:
        _out, _ = _p.communicate(base64.b64decode({payload!r}), timeout={wall})
        _rc = _p.returncode
    except subprocess.TimeoutExpired:
        _rc = "timeout"
    try:
        os.killpg(_p.pid, signal.SIGKILL)
    except OSError:
        pass
    if _rc == "timeout":
        try:
            _out, _ = _p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            _out = b""
finally:
    shutil.rmtree(_dir, ignore_errors=True)  # the tests' stdin files with it
print({marker!r} + json.dumps({{"out": base64.b64encode(_out).decode(), "rc": _rc}}))
"""


class SandboxServiceError(RuntimeError):
    """The sandbox service could not run the program (not the program's fault)."""


class E2BSandbox(ChildSandbox):
    """Runs programs in an E2B Code Interpreter sandbox (the ``e2b`` extra, ``E2B_API_KEY``)."""

    isolation = "e2b"

    def __init__(self, limits: Limits | None = None, api_key: str | None = None, template: str | None = None,
                 sandbox_timeout: int = 600):
        self.limits = limits or Limits()
        self.api_key = api_key or os.environ.get("E2B_API_KEY")
        if not self.api_key:
            raise SandboxServiceError("The e2b sandbox needs an API key: set E2B_API_KEY "
                                      "(https://e2b.dev/dashboard), or use the local sandbox (--sandbox local; "
                                      "--backend local for `codeforest check`; CODEFOREST_SANDBOX=local)")
        self.template = template
        self.sandbox_timeout = sandbox_timeout
        self._remote = None
        self._lock = threading.Lock()

    def _sandbox(self):
        with self._lock:
            if self._remote is None:
                try:
                    from e2b_code_interpreter import Sandbox
                except ImportError as exc:
                    raise SandboxServiceError(f"The e2b sandbox needs its SDK: {install_hint('e2b')}") from exc
                options = {"api_key": self.api_key, "timeout": self.sandbox_timeout, "allow_internet_access": False}
                if self.template:
                    options["template"] = self.template
                self._remote = self._call(lambda: Sandbox.create(**options), "create a sandbox")
            return self._remote

    def _run_child(self, payload: dict, timeout: float) -> tuple[list[dict], str | None]:
        payload = {**payload, "drop_to_uid": 65534}  # as root, the program runs as nobody
        wall = timeout * (len(payload["tests"]) - payload.get("start", 0)) + STARTUP_GRACE_S
        driver = DRIVER.format(runner=base64.b64encode(RUNNER_SOURCE.read_bytes()).decode(),
                               payload=base64.b64encode(json.dumps(payload).encode()).decode(),
                               wall=wall, marker=MARKER)
        remote = self._sandbox()
        execution = self._call(lambda: remote.run_code(driver, timeout=wall + 30), "run the program")
        if execution.error is not None:
            raise SandboxServiceError(f"The e2b driver failed: {execution.error.name}: {execution.error.value}")
        stdout = "".join(execution.logs.stdout)
        found = [ln for ln in stdout.splitlines() if ln.startswith(MARKER)]
        if not found:
            raise SandboxServiceError("The e2b sandbox returned no result")
        reply = json.loads(found[-1][len(MARKER):])
        lines = []
        for raw in base64.b64decode(reply["out"]).splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:
                continue
        rc = reply["rc"]
        if rc == "timeout":
            return lines, f"Timed out after {timeout:g} s (killed)"
        if isinstance(rc, int) and rc < 0:
            return lines, f"Killed by signal {-rc}"
        if rc:
            return lines, f"The program exited with status {rc}"
        return lines, None

    def _call(self, action, what: str):
        from e2b.exceptions import (
            AuthenticationException,
            NotFoundException,
            RateLimitException,
            SandboxException,
            SandboxNotRunningException,
            TimeoutException,
        )

        try:
            return action()
        except AuthenticationException as exc:
            raise SandboxServiceError(f"E2B rejected the API key while trying to {what}: check E2B_API_KEY") from exc
        except RateLimitException as exc:
            raise SandboxServiceError(f"E2B quota or rate limit reached while trying to {what}; wait or raise "
                                      "your plan's limits") from exc
        except (NotFoundException, SandboxNotRunningException) as exc:
            self._remote = None  # the remote sandbox expired; the next run creates a new one
            raise SandboxServiceError(f"The E2B sandbox is gone (expired?) while trying to {what}") from exc
        except TimeoutException as exc:
            raise SandboxServiceError(f"E2B timed out while trying to {what}: {exc}") from exc
        except SandboxException as exc:
            raise SandboxServiceError(f"E2B failed to {what}: {exc}") from exc

    def close(self) -> None:
        """Kill the remote sandbox."""
        with self._lock:
            if self._remote is not None:
                try:
                    self._remote.kill()
                finally:
                    self._remote = None
