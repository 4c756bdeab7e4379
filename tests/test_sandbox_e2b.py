"""The E2B backend against the real e2b-code-interpreter SDK, with the SDK's HTTP transport faked.

E2B cannot be reached from here (no network, no account), so the SDK's ``get_transport`` is replaced
by an ``httpx.MockTransport`` playing the E2B service: the control-plane API (create, kill) and the
Code Interpreter's ``/execute`` stream. The fake runs the submitted driver in a local subprocess,
as the remote kernel would, so the whole path (driver, runner, result lines, SDK parsing) is real.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from codeforest.tools.sandbox_e2b import E2BSandbox, SandboxServiceError
from codeforest.tools.testing import TestSuite


class FakeE2B:
    def __init__(self, create_status: int = 201, execute_error: Exception | None = None):
        self.create_status = create_status
        self.execute_error = execute_error
        self.requests: list[tuple[str, str]] = []
        self.api_keys: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        if request.url.path == "/v2/sandboxes" and request.method == "POST":
            self.api_keys.append(request.headers.get("X-API-Key", ""))
            if self.create_status != 201:
                return httpx.Response(self.create_status, json={"code": self.create_status, "message": "denied"})
            return httpx.Response(201, json={"templateID": "code-interpreter-v1", "sandboxID": "sbx-1",
                                             "clientID": "c", "envdVersion": "0.2.0", "envdAccessToken": "t"})
        if request.url.path == "/execute":
            if self.execute_error is not None:
                raise self.execute_error
            code = json.loads(request.content)["code"]
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
            events = [{"type": "stdout", "text": line + "\n", "timestamp": 0} for line in done.stdout.splitlines()]
            events.append({"type": "end_of_execution"})
            return httpx.Response(200, content="".join(json.dumps(e) + "\n" for e in events).encode())
        return httpx.Response(204)


@pytest.fixture
def fake_service(monkeypatch):
    import e2b.api.client_sync as control_plane
    import e2b_code_interpreter.code_interpreter_sync as interpreter

    service = FakeE2B()

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
