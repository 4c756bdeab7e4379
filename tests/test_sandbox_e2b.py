"""The E2B backend against the real e2b-code-interpreter SDK, with the SDK's HTTP transport faked.

E2B cannot be reached from here (no network, no account), so the SDK's ``get_transport`` is replaced
by an ``httpx.MockTransport`` playing the E2B service: the control-plane API (create, kill) and the
Code Interpreter's ``/execute`` stream. The fake runs the submitted driver in a local subprocess,
as the remote kernel would, so the whole path (driver, runner, result lines, SDK parsing) is real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from codeforest.suites import TestSuite
from codeforest.tools.sandbox_e2b import E2BSandbox, SandboxServiceError
from tests.test_hostile import _alive


class FakeE2B:
    def __init__(self, create_status: int = 201, execute_error: Exception | None = None):
        self.create_status = create_status
        self.execute_error = execute_error
        self.requests: list[tuple[str, str]] = []
        self.api_keys: list[str] = []
        self.created: list[dict] = []  # the bodies of the create requests
        self.remote_tmp = None  # the remote machine's temporary folder (set by the fixture)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        if request.url.path == "/v2/sandboxes" and request.method == "POST":
            self.api_keys.append(request.headers.get("X-API-Key", ""))
            self.created.append(json.loads(request.content or b"{}"))
            if self.create_status != 201:
                return httpx.Response(self.create_status, json={"code": self.create_status, "message": "denied"})
            return httpx.Response(201, json={"templateID": "code-interpreter-v1", "sandboxID": "sbx-1",
                                             "clientID": "c", "envdVersion": "0.2.0", "envdAccessToken": "t"})
        if request.url.path == "/execute":
            if self.execute_error is not None:
                raise self.execute_error
            code = json.loads(request.content)["code"]
            env = {**os.environ, "TMPDIR": str(self.remote_tmp)}
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
            events = [{"type": "stdout", "text": line + "\n", "timestamp": 0} for line in done.stdout.splitlines()]
            events.append({"type": "end_of_execution"})
            return httpx.Response(200, content="".join(json.dumps(e) + "\n" for e in events).encode())
        return httpx.Response(204)


@pytest.fixture
def fake_service(monkeypatch, tmp_path):
    import e2b.api.client_sync as control_plane
    import e2b_code_interpreter.code_interpreter_sync as interpreter

    service = FakeE2B()
    service.remote_tmp = tmp_path / "remote-tmp"
    service.remote_tmp.mkdir()

    def transport(*args, **kwargs):
        return httpx.MockTransport(service)

    monkeypatch.setattr(control_plane, "get_transport", transport)
    monkeypatch.setattr(interpreter, "get_transport", transport)
    monkeypatch.setenv("E2B_API_KEY", "e2b_fake_key")
    return service


def test_same_results_as_the_local_backend(fake_service):
    sandbox = E2BSandbox()
    code = "def f(x):\n    if x == 3:\n        while True:\n            pass\n    return x * 2\n"
    suite = TestSuite.function(["assert f(1) == 2", "assert f(2) == 5", "assert f(3) == 6", "assert f(4) == 8"], "f")
    result = sandbox.run(code, suite, timeout=1.0)
    assert [o.passed for o in result.outcomes] == [True, False, False, True]
    assert result.outcomes[1].actual == "4" and result.outcomes[2].reason == "timeout"
    stdio = sandbox.run("print(int(input()) + 1)\n", TestSuite.stdio([{"input": "1\n", "output": "2\n"}]))
    assert stdio.all_passed
    assert fake_service.requests.count(("POST", "/v2/sandboxes")) == 1, "one remote sandbox, reused"
    assert fake_service.api_keys == ["e2b_fake_key"]
    sandbox.close()
    assert ("DELETE", "/sandboxes/sbx-1") in fake_service.requests


def test_a_crashing_program_costs_only_its_test(fake_service):
    result = E2BSandbox().run("import os\ndef f():\n    os._exit(1)\n",
                              TestSuite.function(["assert f()", "assert 1 == 1"], "f"))
    assert [o.reason for o in result.outcomes] == ["crash", None]


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    with pytest.raises(SandboxServiceError, match="set E2B_API_KEY"):
        E2BSandbox()


@pytest.mark.parametrize("status, message", [(401, "rejected the API key"), (429, "quota or rate limit")])
def test_service_refusals_are_clear_errors(fake_service, status, message):
    fake_service.create_status = status
    with pytest.raises(SandboxServiceError, match=message):
        E2BSandbox().run("x = 1", TestSuite.function(["assert x == 1"]))


def test_service_timeout_is_a_clear_error(fake_service):
    fake_service.execute_error = httpx.ReadTimeout("slow")
    with pytest.raises(SandboxServiceError, match="timed out"):
        E2BSandbox().run("x = 1", TestSuite.function(["assert x == 1"]))


def test_the_remote_sandbox_has_no_internet_access(fake_service):
    E2BSandbox().run("x = 1", TestSuite.function(["assert x == 1"]))
    assert [body.get("allow_internet_access") for body in fake_service.created] == [False]


def test_a_run_leaves_no_file_and_no_process_behind(fake_service, tmp_path):
    """Hidden tests' inputs are written to the scratch folder as stdin files: none may outlive its run, nor may a
    process a program detached, which could read the next run's files."""
    shared = Path(tempfile.mkdtemp())  # as root the program runs as nobody: it needs a folder it may write
    shared.chmod(0o777)
    marker = shared / "daemon.pid"
    program = ("import os, time\nopen('left.txt', 'w').write('x')\n"
               "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
               f"        open({str(marker)!r}, 'w').write(str(os.getpid()))\n        time.sleep(60)\n"
               "    os._exit(0)\ntime.sleep(0.5)\nprint(int(input()) + 1)\n")
    result = E2BSandbox().run(program, TestSuite.stdio([{"input": "1\n", "output": "2\n"}]), timeout=5.0)
    assert result.all_passed and marker.read_text().isdigit()
    assert not _alive(int(marker.read_text())), "the detached daemon outlived the run"
    assert list(fake_service.remote_tmp.iterdir()) == [], "the run's scratch folder was left behind"


def test_scoring_on_hidden_tests_has_a_remote_sandbox_of_its_own(fake_service, monkeypatch):
    from codeforest import scoring
    from codeforest.problems import Task
    from codeforest.tools import sandbox

    monkeypatch.setattr(sandbox, "_remote_sandboxes", {})
    problem = {"id": "P/1", "prompt": "Print n + 1.", "kind": "stdio", "entry_point": None,
               "public_tests": [{"input": "1\n", "output": "2\n"}]}
    task = Task(problem, TestSuite.stdio([{"input": "5\n", "output": "6\n"}]), "test")
    code = "print(int(input()) + 1)\n"
    assert sandbox.run_public_tests(problem, code, backend="e2b").all_passed
    assert scoring.score_private(task, code, backend="e2b").passed
    assert sandbox.run_public_tests(problem, code, backend="e2b").all_passed
    assert len(fake_service.created) == 2, "search runs share one sandbox, scoring has the other"
    sandbox.close_remote_sandboxes()
    assert sum(method == "DELETE" for method, _ in fake_service.requests) == 2

