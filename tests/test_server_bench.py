"""``bench --server``: the same benchmark on a real ``langgraph dev`` (several jobs per worker), driven with
langgraph_sdk against a scripted model endpoint; private tests are scored here and never sent."""

from __future__ import annotations

import json

import pytest
from langgraph_sdk import get_sync_client

from codeforest.bench import Bench, RunnerLost, read_results
from codeforest.cli import main
from codeforest.context import Context
from codeforest.loading import load_dataset
from codeforest.problems import Task
from codeforest.scripted_endpoint import ScriptedEndpoint, any_role_reply
from codeforest.server_runs import ServerRunError, ServerSolver
from tests.langgraph_dev import free_port, langgraph_dev
from tests.test_bench import _private_only_strings

pytestmark = pytest.mark.server
SAME = ("final_code", "final_node", "stop_reason", "public_pass_rate", "private_passed", "private_pass_rate",
        "llm_calls", "programs", "settings", "model", "error")


@pytest.fixture(scope="module")
def endpoint():
    with ScriptedEndpoint([], respond=any_role_reply) as api:
        yield api


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with langgraph_dev(tmp_path_factory.mktemp("langgraph") / "server.log", "--n-jobs-per-worker", "4") as url:
        yield url


def test_server_records_match_local_ones_and_no_private_test_is_sent(server, endpoint, fixtures, tmp_path):
    tasks = load_dataset(str(fixtures / "functions.jsonl"))
    context = Context(model="scripted", base_url=endpoint.url)
    Bench(["direct", "bester"], tasks, tmp_path / "local", context=context, dataset="mini").run()
    before = len(endpoint.requests)
    remote = tmp_path / "server"
    assert main(["bench", "--graph", "direct", "--graph", "bester", "--dataset", str(fixtures / "functions.jsonl"),
                 "--model", "scripted", "--base-url", endpoint.url, "--server", server, "--concurrency", "3",
                 "--out", str(remote)]) == 0
    local = {(r["graph"], r["problem_id"]): r for r in read_results(tmp_path / "local")}
    served = {(r["graph"], r["problem_id"]): r for r in read_results(remote)}
    assert set(served) == set(local) and len(served) == 6
    for key, record in served.items():
        assert {k: record.get(k) for k in SAME} == {k: local[key].get(k) for k in SAME}, key
        assert record["private_tests"] == local[key]["private_tests"] > 0  # scored here, on the private tests
    sent = json.dumps(endpoint.requests[before:])
    client = get_sync_client(url=server)
    solver = ServerSolver(server, remote)
    for task in tasks:
        secrets = _private_only_strings(task)
        assert secrets
        for secret in secrets:  # each private-only assert, as written and as JSON escapes it
            assert secret not in sent and json.dumps(secret)[1:-1] not in sent
        for graph in ("direct", "bester"):
            run = client.runs.list(solver.thread_id(f"{graph}:{task.id}"))[0]
            assert run["kwargs"]["input"] == {"problem": task.problem}  # the public part, nothing else
            assert "private_tests" not in json.dumps(run["kwargs"])


def test_a_server_run_sends_each_role_to_the_model_its_entry_names(server, endpoint, fixtures, tmp_path):
    """``--role critic=MODEL@URL`` on a server run: the critic's calls reach the second endpoint under its model, the
    rest the search model, and the record counts both models as a local run does."""
    tasks = load_dataset(str(fixtures / "functions.jsonl"))[:1]
    with ScriptedEndpoint([], respond=any_role_reply) as judge:
        roles = {"critic": {"model": "m-critic", "base_url": judge.url}}
        Bench(["codetree"], tasks, tmp_path / "local", dataset="mini",
              context=Context(model="scripted", base_url=endpoint.url, roles=roles)).run()
        before = (len(endpoint.requests), len(judge.requests))
        assert main(["bench", "--graph", "codetree", "--dataset", str(fixtures / "functions.jsonl"), "--limit", "1",
                     "--model", "scripted", "--base-url", endpoint.url, "--role", f"critic=m-critic@{judge.url}",
                     "--server", server, "--out", str(tmp_path / "server")]) == 0
        searched, judged = endpoint.requests[before[0]:], judge.requests[before[1]:]
    assert searched and judged
    assert {r["model"] for r in searched} == {"scripted"} and {r["model"] for r in judged} == {"m-critic"}
    (local,), (served,) = read_results(tmp_path / "local"), read_results(tmp_path / "server")
    assert set(served["models"]) == {"scripted", "m-critic"}
    assert {k: served.get(k) for k in (*SAME, "models")} == {k: local.get(k) for k in (*SAME, "models")}


def test_a_rerun_collects_finished_server_runs_without_new_model_calls(server, endpoint, fixtures, tmp_path):
    tasks = load_dataset(str(fixtures / "functions.jsonl"))[:2]
    context = Context(model="scripted", base_url=endpoint.url)
    solver = ServerSolver(server, tmp_path)
    Bench(["bester"], tasks, tmp_path, context=context, dataset="mini", runner=solver, concurrency=2).run()
    first = read_results(tmp_path)
    (tmp_path / "results.jsonl").unlink()  # as if the client died before writing
    calls = len(endpoint.requests)
    Bench(["bester"], tasks, tmp_path, context=context, dataset="mini", runner=solver).run()
    assert len(endpoint.requests) == calls  # both server runs were collected, not repeated
    again = read_results(tmp_path)
    codes = {r["problem_id"]: r["final_code"] for r in again}
    assert codes == {r["problem_id"]: r["final_code"] for r in first} and len(again) == 2


def test_a_server_side_failure_is_an_error_record(server, endpoint, tmp_path):
    broken = Task(problem={"id": "Bad/1", "kind": "function", "entry_point": "f",
                           "public_tests": ["assert f() == 1"]},  # no prompt: the graph raises
                  private_tests=None, source="test")
    context = Context(model="scripted", base_url=endpoint.url)
    with pytest.raises(ServerRunError, match="status 'error'"):
        ServerSolver(server, tmp_path / "direct")(broken.problem, "direct", context, "direct:Bad/1")
    Bench(["direct"], [broken], tmp_path, context=context, dataset="bad", runner=ServerSolver(server, tmp_path)).run()
    (record,) = read_results(tmp_path)
    assert record["error"].startswith("ServerRunError") and record["final_code"] == ""


def test_a_lost_server_stops_the_bench_and_a_rerun_completes_it(server, endpoint, fixtures, tmp_path):
    tasks = load_dataset(str(fixtures / "functions.jsonl"))
    context = Context(model="scripted", base_url=endpoint.url)
    gone = ServerSolver(f"http://127.0.0.1:{free_port()}", tmp_path)
    with pytest.raises(RunnerLost, match="rerun the same command to resume"):
        Bench(["direct"], tasks, tmp_path, context=context, dataset="mini", runner=gone, concurrency=2).run()
    assert read_results(tmp_path) == []  # nothing recorded as an error: nothing to --retry-errors
    Bench(["direct"], tasks, tmp_path, context=context, dataset="mini", runner=ServerSolver(server, tmp_path)).run()
    assert {r["problem_id"] for r in read_results(tmp_path) if r["error"] is None} == {t.id for t in tasks}


def test_the_server_runs_several_problems_at_once(server, fixtures, tmp_path):
    """With --n-jobs-per-worker, the three runs are under way together (each waits 1 s on its model call)."""
    tasks = load_dataset(str(fixtures / "functions.jsonl"))
    with ScriptedEndpoint([], delay=1.0, respond=any_role_reply) as slow:
        solver = ServerSolver(server, tmp_path)
        Bench(["direct"], tasks, tmp_path, context=Context(model="scripted", base_url=slow.url), dataset="mini",
              runner=solver, concurrency=3).run()
    client = get_sync_client(url=server)
    runs = [client.runs.list(solver.thread_id(f"direct:{t.id}"))[0] for t in tasks]
    assert all(r["status"] == "success" for r in runs)
    assert max(r["created_at"] for r in runs) < min(r["updated_at"] for r in runs)  # they overlapped
