"""Two LangGraph API server processes sharing a real PostgreSQL and Redis (Debian packages, started here on
127.0.0.1 as their own users), with ``bench --server``: both run problems, killing one mid-run loses no finished
result, and a rerun against the other completes the set.

The servers run from an environment of their own with the ``server-pg`` extra (its runtime pins another
``langgraph-api`` than the test extra's ``langgraph-cli``); it is built once and kept in the user cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from codeforest.bench import Bench, RunnerLost, read_results
from codeforest.context import Context
from codeforest.loading import load_dataset
from codeforest.scripted_endpoint import ScriptedEndpoint, any_role_reply
from codeforest.server_runs import ServerSolver
from tests.langgraph_dev import ROOT, free_port
from tests.system_packages import missing

pytestmark = pytest.mark.server
PG_BIN = Path("/usr/lib/postgresql")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _postgres_bin() -> Path:
    versions = sorted(PG_BIN.glob("*/bin/postgres")) if PG_BIN.is_dir() else []
    if not versions:
        missing("needs Debian's PostgreSQL (apt-get install postgresql)")
    _as_root()
    return versions[-1].parent


def _as_root() -> None:
    """The servers run as their own users (PostgreSQL refuses root), started with runuser, which needs root."""
    if os.geteuid() != 0 or not shutil.which("runuser"):
        missing("needs root and runuser to start PostgreSQL and Redis as their own users")


@pytest.fixture(scope="module")
def server_env() -> Path:
    """A virtual environment with codeforest[server-pg] (editable), rebuilt when pyproject.toml changes; one per
    checkout, since an editable install runs the code of the checkout it was made from."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + str(ROOT).encode()).hexdigest()[:12]
    env = Path.home() / ".cache" / "codeforest" / "test-envs" / f"server-pg-{digest}"
    python = env / "bin" / "python"
    if not (env / "ready").is_file():
        shutil.rmtree(env, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", f"{ROOT}[server-pg]"], check=True)
        (env / "ready").write_text("ok")
    return python


@contextlib.contextmanager
def owned_folder(user: str):
    """A fresh folder under the system temp dir owned by ``user`` (pytest's own are closed to other users)."""
    folder = Path(tempfile.mkdtemp(prefix=f"codeforest-{user}-"))
    shutil.chown(folder, user)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres() -> str:
    """A PostgreSQL cluster of its own on 127.0.0.1, run by the postgres user (it refuses root)."""
    bin_dir = _postgres_bin()  # skips (or fails under CI) before anything is made
    with owned_folder("postgres") as data:
        yield from _postgres(bin_dir, data)


def _postgres(bin_dir: Path, data: Path):
    port = free_port()
    as_postgres = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_postgres, str(bin_dir / "initdb"), "-D", str(data / "db"), "--auth=trust", "-U", "postgres"],
                   check=True, capture_output=True)
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1"
    subprocess.run([*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-l", str(data / "pg.log"), "-w",
                    "-o", options, "start"], check=True, capture_output=True)
    try:
        yield f"postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable"
    finally:
        subprocess.run([*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-m", "immediate", "stop"],
                       capture_output=True)


@pytest.fixture(scope="module")
def redis() -> str:
    """A Redis server of its own on 127.0.0.1, without persistence."""
    server = shutil.which("redis-server")
    if not server:
        missing("needs Debian's Redis (apt-get install redis-server)")
    _as_root()
    user = "redis" if subprocess.run(["id", "redis"], capture_output=True).returncode == 0 else "postgres"
    with owned_folder(user) as folder:
        yield from _redis(server, user, folder)


def _redis(server: str, user: str, folder: Path):
    port = free_port()
    proc = subprocess.Popen(["runuser", "-u", user, "--", server, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@contextlib.contextmanager
def server_process(python: Path, database: str, redis_uri: str, log: Path):
    """One ``codeforest.pg_server`` process (2 jobs at once, a 2 s heartbeat); yields (url, process)."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(python), "-m", "codeforest.pg_server", "--port", str(port), "--database-uri",
                                 database, "--redis-uri", redis_uri, "--jobs", "2", "--log-level", "INFO"],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "LG_BG_JOB_HEARTBEAT": "2"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"the server exited:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"the server did not start:\n{log.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(url + "/ok", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        yield url, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)


def logged_runs(log: Path, event: str) -> set[str]:
    """The run ids of a server process's log lines saying ``event``."""
    lines = ANSI.sub("", log.read_text(errors="replace")).splitlines()
    return {m.group(1) for line in lines if event in line for m in [re.search(r"run_id=([0-9a-f-]{36})", line)] if m}


def runs_started(log: Path) -> set[str]:
    """The run ids a server process started."""
    return logged_runs(log, "Starting background run")


def runs_finished(log: Path) -> set[str]:
    """The run ids a server process finished."""
    return logged_runs(log, "Background run succeeded")


def test_two_processes_share_the_work_and_survive_losing_one(postgres, redis, server_env, tmp_path):
    tasks = load_dataset("humaneval")[:8]
    log_a, log_b, out = tmp_path / "a.log", tmp_path / "b.log", tmp_path / "results"
    with ScriptedEndpoint([], delay=3.0, respond=any_role_reply) as endpoint:
        context = Context(model="scripted", base_url=endpoint.url)
        with server_process(server_env, postgres, redis, log_a) as (url_a, proc_a), \
                server_process(server_env, postgres, redis, log_b) as (url_b, _):
            bench = Bench(["direct"], tasks, out, context=context, dataset="humaneval",
                          runner=ServerSolver(url_a, out), concurrency=8)

            lost: set[str] = set()

            def kill_a_while_it_runs_problems():
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    in_flight = runs_started(log_a) - runs_finished(log_a)
                    if read_results(out) and in_flight:
                        lost.update(in_flight)
                        os.killpg(proc_a.pid, signal.SIGKILL)
                        return
                    time.sleep(0.05)

            killer = threading.Thread(target=kill_a_while_it_runs_problems)
            killer.start()
            with pytest.raises(RunnerLost):
                bench.run()
            killer.join()
            first = read_results(out)
            assert lost and 1 <= len(first) < 8 and all(r["error"] is None for r in first)
            assert runs_started(log_a) and runs_started(log_b), "both processes ran problems"
            # the rerun, against the survivor: finished runs are collected, A's lost runs are taken over
            Bench(["direct"], tasks, out, context=context, dataset="humaneval", runner=ServerSolver(url_b, out)).run()
        records = read_results(out)
    assert records[:len(first)] == first  # nothing finished was lost or rewritten
    assert {r["problem_id"] for r in records} == {t.id for t in tasks} and len(records) == 8
    assert all(r["error"] is None and r["llm_calls"] == 1 for r in records)
    # the survivor swept the killed process's runs once their heartbeat expired and ran them to the end
    assert lost <= runs_started(log_b) and lost <= runs_finished(log_b)
