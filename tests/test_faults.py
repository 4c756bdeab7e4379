"""Model faults against a scripted endpoint on 127.0.0.1 that fails on cue, under every graph: transient
faults are absorbed with the same result, persistent ones end the search with its partial result; bench
safety (a lock, lines that are not records), and no credential of a base URL anywhere it could leak."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from codeforest import solve
from codeforest.bench import Bench, locked, read_results
from codeforest.cli import main
from codeforest.context import Context
from codeforest.loading import load_dataset
from codeforest.registry import context_for, graph_names
from tests.fake_openai import FakeOpenAI
from tests.test_native import INC, SMALL, Universal

GRAPHS = graph_names()


def answer(body: dict) -> str:
    """The scripted model behind the endpoint: every role of every graph, programs that fail at first."""
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    return Universal(wrong="Add two" not in text).reply(text)


def endpoint(**kwargs) -> FakeOpenAI:
    return FakeOpenAI([], respond=answer, **kwargs)


def context(graph: str, api: FakeOpenAI, **settings) -> Context:
    return context_for(graph, base_url=api.url, model="fake", structured_output=False, request_timeout=1.0,
                       **{**SMALL[graph], **settings})


def run(graph: str, api: FakeOpenAI, **settings) -> dict:
    return solve(INC, graph, context=context(graph, api, **settings))


TRANSIENT = ["500", "drop", None, "badjson", "429", None, "stall", None]  # at most 2 faults per call


@pytest.mark.parametrize("graph", GRAPHS)
def test_transient_faults_are_absorbed_with_the_same_result(graph):
    clean, faulty = endpoint(), endpoint(faults=TRANSIENT, stall_s=3)
    try:
        expected, got = run(graph, clean), run(graph, faulty)
    finally:
        clean.close()
        faulty.close()
    calls = len(clean.requests)
    injected = sum(1 for f in TRANSIENT[:_prefix_with(calls, TRANSIENT)] if f)
    assert faulty.failed == injected >= 2 and len(faulty.requests) == calls + injected
    assert got["stop_reason"] == expected["stop_reason"] != "model_error" and got["error"] is None
    assert got["final_code"] == expected["final_code"] and got["nodes"].keys() == expected["nodes"].keys()
    assert {k: v for k, v in got["cost"].items() if k != "wall_s"} == \
        {k: v for k, v in expected["cost"].items() if k != "wall_s"}


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("fault", ["500", "drop", "badjson", "stall"])
def test_persistent_faults_end_the_search_with_its_partial_result(graph, fault):
    good = {"direct": 0, "codetree": 3, "rethink_mcts": 4, "bester": 3, "rpm_mcts": 9, "gvr": 4,
            "gvr_bon": 7, "resample": 2, "reflexion": 3}[graph]  # calls that succeed
    api = endpoint(faults=[None] * good, always=fault, stall_s=1.5)
    try:
        out = run(graph, api, retries=1)
    finally:
        api.close()
    assert out["stop_reason"] == "model_error" and f"at {api.url}" in out["error"] and "(2 attempts)" in out["error"]
    assert out["cost"]["llm_calls"] == good and out["cost"]["prompt_tokens"] == 11 * good  # the true cost
    assert len(api.requests) == good + 2  # the failing call and its one retry
    if graph == "direct":
        assert out["final_code"] == "" and out["final_node"] is None
    else:  # the best program found before the fault
        assert out["nodes"] and "def inc" in out["final_code"] and out["nodes"][out["final_node"]]["code"]


def test_a_fault_in_one_of_several_parallel_branches_ends_the_search_once(caplog):
    events = []
    # BESTER: initial, 2 reflections, then the two parallel repairs meet three 500s: whatever order the
    # attempts arrive in, one repair fails both of its attempts
    api = endpoint(faults=[None] * 3 + ["500"] * 3)
    try:
        out = solve(INC, "bester", context=context("bester", api, retries=1, bester_concurrency=2),
                    on_event=events.append)
    finally:
        api.close()
    assert out["stop_reason"] == "model_error" and out["final_node"] is not None
    assert [e["event"] for e in events].count("finished") == 1


def test_solve_prints_the_partial_result_and_exits_non_zero(capsys, tmp_path):
    api = endpoint(faults=[None] * 3, always="500")
    secret_url = api.url.replace("http://", "http://alice:s3cret-pw@")
    try:
        code = main(["solve", "--problem-file", str(_problem_file(tmp_path)), "--graph", "codetree", "--json",
                     "--base-url", secret_url, "--model", "fake", "--retries", "1", "--request-timeout", "2"])
    finally:
        api.close()
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 3 and out["stop_reason"] == "model_error" and "Error code: 500" in out["error"]
    assert out["cost"]["llm_calls"] == 3 and out["nodes"] and out["final_code"]
    assert "s3cret-pw" not in captured.out + captured.err and "alice:" not in captured.out + captured.err
    assert "http://***@127.0.0.1" in captured.err  # the banner names the endpoint without its credentials


def test_refused_connection_names_the_endpoint(capsys, tmp_path):
    code = main(["solve", "--problem-file", str(_problem_file(tmp_path)), "--base-url",
                 "http://bob:hunter2@127.0.0.1:9/v1", "--model", "fake", "--retries", "0", "--json"])
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert code == 3 and "Connection error" in error and "at http://***@127.0.0.1:9/v1" in error
    assert "hunter2" not in captured.out + captured.err


def test_bench_records_a_model_error_with_its_tree_and_cost_and_retries_it(tmp_path):
    tasks = load_dataset(str(_problem_file(tmp_path)))
    broken, healthy = endpoint(faults=[None] * 3, always="500"), endpoint()
    secret = lambda api: api.url.replace("http://", "http://carol:pw-in-url@")  # noqa: E731
    try:
        out = tmp_path / "run"
        Bench(["codetree"], tasks, out, dataset="mine", context=context_for(
            "codetree", base_url=secret(broken), model="fake", structured_output=False, retries=0,
            cache_path=str(tmp_path / "cache.sqlite"), **SMALL["codetree"])).run()
        (record,) = read_results(out)
        assert record["error"].startswith("model_error: ") and record["stop_reason"] == "model_error"
        assert "injected 500 for Basic ***" in record["error"]  # the URL's credentials, echoed by the endpoint
        assert record["llm_calls"] == 3 and record["tree_programs"] >= 1 and record["final_code"]
        (tree,) = out.glob("trees/codetree*/fake/mine/Mine_1.json")  # the folder is named by the run's settings
        assert tree == out / record["tree"]
        assert json.loads(tree.read_text()) == {i: n for i, n in json.loads(tree.read_text()).items() if n}
        Bench(["codetree"], tasks, out, dataset="mine", retry_errors=True, context=context_for(
            "codetree", base_url=healthy.url, model="fake", structured_output=False,
            cache_path=str(tmp_path / "cache.sqlite"), **SMALL["codetree"])).run()
        latest = read_results(out)[-1]
        assert latest["error"] is None and latest["stop_reason"] != "model_error"
    finally:
        broken.close()
        healthy.close()
    for path in [*out.rglob("*"), tmp_path / "cache.sqlite"]:
        if path.is_file():
            assert b"pw-in-url" not in path.read_bytes() and b"Y2Fyb2w6cHctaW4tdXJs" not in path.read_bytes(), path


def test_bench_exits_non_zero_while_a_run_ended_in_an_error(tmp_path, capsys):
    """A script (or CI) running ``bench`` learns that the measurement is incomplete, this time and on a rerun that
    skips the errored problem; ``--retry-errors`` with a working endpoint completes it."""
    problems, out, healthy = str(_problem_file(tmp_path)), str(tmp_path / "run"), endpoint()
    args = ["bench", "--graph", "direct", "--dataset", problems, "--out", out, "--model", "fake", "--retries", "0"]
    try:
        assert main([*args, "--base-url", "http://127.0.0.1:9/v1"]) == 3
        assert "1 run(s) ended in an error (direct Mine/1; see results.jsonl)" in capsys.readouterr().err
        assert main([*args, "--base-url", healthy.url]) == 3  # skipped as done, still an error
        assert "--retry-errors runs them again" in capsys.readouterr().err
        assert main([*args, "--base-url", healthy.url, "--retry-errors"]) == 0
        assert "ended in an error" not in capsys.readouterr().err
    finally:
        healthy.close()


def test_a_second_bench_on_the_same_folder_stops_naming_the_holder(tmp_path, capsys):
    out = tmp_path / "run"
    with locked(out):
        assert main(["bench", "--graph", "direct", "--dataset", str(_problem_file(tmp_path)), "--out", str(out),
                     "--base-url", "http://127.0.0.1:9/v1", "--model", "fake"]) == 2
    assert f"in use by another codeforest bench (pid {os.getpid()})" in capsys.readouterr().err
    other = subprocess.run([sys.executable, "-c", f"from codeforest.bench import locked\nwith locked(__import__("
                            f"'pathlib').Path({str(out)!r})): print('free')"], capture_output=True, text=True)
    assert other.stdout.strip() == "free"  # released when the holder's run ends


def test_lines_that_are_not_records_are_skipped_with_a_warning(tmp_path, caplog):
    good = {"problem_id": "P/1", "graph": "direct", "model": "m", "private_passed": True, "error": None}
    (tmp_path / "results.jsonl").write_text("\n".join(
        [json.dumps(good), "{}", "null", "[1, 2]", "not json", json.dumps({**good, "problem_id": "P/2"}),
         '{"problem_id": "P/3", "gr']) + "\n")
    with caplog.at_level(logging.WARNING, logger="codeforest.bench"):
        records = read_results(tmp_path)
    assert [r["problem_id"] for r in records] == ["P/1", "P/2"]
    warned = [r.getMessage() for r in caplog.records]
    assert any("results.jsonl:2: not a result record" in m for m in warned)
    assert any("results.jsonl:5: not JSON" in m for m in warned) and len(warned) == 4  # the cut last line: silent
    assert main(["report", str(tmp_path)]) == 0


def test_bester_survives_empty_programs():
    api = FakeOpenAI([], respond=lambda body: "")  # every reply empty: programs, reflections, repairs
    try:
        out = solve(INC, "bester", context=context("bester", api))
    finally:
        api.close()
    assert out["stop_reason"] == "depth_exhausted" and out["final_node"] == "n1" and out["cost"]["llm_calls"] == 9


def _prefix_with(successes: int, pattern: list) -> int:
    """The length of the shortest prefix of ``pattern`` holding ``successes`` normal answers (all of it if fewer)."""
    seen = 0
    for i, fault in enumerate(pattern):
        seen += fault is None
        if seen == successes:
            return i + 1
    return len(pattern)


def _problem_file(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"task_id": "Mine/1", "prompt": INC["prompt"], "entry_point": "inc",
                                "given_tests": INC["public_tests"]}) + "\n")
    return path
