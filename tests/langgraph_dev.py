"""Start a real ``langgraph dev`` server on 127.0.0.1 for a test, and stop it (its whole process group)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def langgraph_dev(log: Path, *extra: str, env: dict | None = None) -> Iterator[str]:
    """``langgraph dev`` with this repository's langgraph.json; yields its URL once it answers /ok."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["langgraph", "dev", "--port", str(port), "--no-browser", "--no-reload", "--config", "langgraph.json",
             *extra], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", **(env or {})})  # the CLI reports use otherwise
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"langgraph dev exited:\n{log.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(url + "/ok", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"langgraph dev did not start:\n{log.read_text()[-3000:]}")
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
