"""CodePRM data collection: Eq. 2 labels on a hand-computed tree, samples, private hygiene, resume, the CLI."""

from __future__ import annotations

import json
import os

import pytest

from codeforest import cli, prm_data
from codeforest.context import Context
from codeforest.jsonl import read_records
from codeforest.loading import load_problem
from codeforest.prm_data import code_scores, collect, covered, label_distribution, samples, step_labels
from codeforest.problems import Task
from codeforest.suites import TestSuite
from codeforest.tools.prm import STEP_TAG
from codeforest.workers import held
from tests.fakes import RespondingChatModel

PRIVATE_MARK = "inc(10**9)"
TASK = Task({"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
             "entry_point": "inc", "public_tests": ["assert inc(1) == 2"]},
            TestSuite.function(["assert inc(1) == 2", "assert inc(-1) == 0", f"assert {PRIVATE_MARK} == 10**9 + 1"],
                               "inc"), "test")


def tree():
    thought = {"kind": "thought", "text": "t"}
    return {"root": {"id": "root", "parent": None, "kind": "root", "order": 0},
            "n1": {**thought, "id": "n1", "parent": "root", "order": 1, "text": "Add one."},
            "n2": {**thought, "id": "n2", "parent": "root", "order": 2, "text": "Return zero."},
            "n3": {**thought, "id": "n3", "parent": "n1", "order": 3, "text": "Use +."},
            "n4": {**thought, "id": "n4", "parent": "n1", "order": 4, "text": "Use -."}}


def test_each_thought_is_labelled_with_the_mean_of_the_code_below_it():
    labels = step_labels(tree(), {"n1": 0.5, "n2": 0.25, "n3": 1.0, "n4": 0.0})
    assert labels == {"n1": pytest.approx(0.5), "n2": 0.25, "n3": 1.0, "n4": 0.0}  # n1: (0.5 + 1 + 0) / 3


def test_a_label_averages_every_code_below_it_not_its_childrens_labels():
    """Three levels and uneven subtrees, so the mean of all code below a thought differs from its median, from
    the mean of its children's labels and from a mean over itself and its children only."""
    nodes = tree()
    nodes["n5"] = {"kind": "thought", "text": "Check.", "id": "n5", "parent": "n3", "order": 5}
    labels = step_labels(nodes, {"n1": 0.2, "n2": 0.25, "n3": 1.0, "n4": 0.0, "n5": 0.9})
    assert labels["n3"] == pytest.approx(0.95)
    # (0.2 + 1 + 0 + 0.9) / 4: not the median 0.55, the children's labels' mean 0.475, nor (0.2 + 1 + 0) / 3
    assert labels["n1"] == pytest.approx(0.525)
    assert labels["n5"] == 0.9 and "root" not in labels


def test_an_empty_program_counts_zero_in_its_thoughts_labels():
    """The released code runs whatever the reply held: an empty program passes nothing and is averaged in."""
    nodes = tree()
    nodes["n3"].update(code="def inc(x):\n    return x + 1", execution={"total": 1, "pass_rate": 1.0})
    nodes["n4"].update(code="", execution={"total": 1, "pass_rate": 0.0})
    scores = code_scores(nodes, TASK, Context())
    assert scores == {"n3": 1.0, "n4": 0.0}
    assert step_labels(nodes, scores)["n1"] == 0.5


def test_one_sample_per_code_with_a_label_per_thought():
    nodes = tree()
    for node_id, body in (("n1", "x + 1"), ("n2", "0"), ("n3", "x + 1"), ("n4", "x - 1")):
        nodes[node_id].update(code=f"def inc(x):\n    return {body}", feedback="fb", execution={"total": 1})
    written = samples(TASK, nodes, step_labels(nodes, {"n1": 0.5, "n2": 0.25, "n3": 1.0, "n4": 0.0}), "mini")
    assert [(s["node"], s["label"]) for s in written] == [("n1", [0.5]), ("n2", [0.25]), ("n3", [0.5, 1.0]),
                                                         ("n4", [0.5, 0.0])]
    n3 = written[2]
    steps = f"1-Thought: Add one. {STEP_TAG}2-Thought: Use +. {STEP_TAG}"
    assert n3["thoughts"] == ["Add one.", "Use +."] and n3["process"] == steps
    assert n3["input"] == (f"{TASK.problem['prompt']} \n1-Thought: Add one.\n2-Thought: Use +.\n \ndef inc(x):\n"
                           f"    return x + 1 \nfb \n{steps}")


class Recorder:
    """Thoughts and code for the inc problem; remembers every text it was shown."""

    def __init__(self):
        self.seen: list[str] = []

    def __call__(self, messages):
        text = "\n".join(str(m.content) for m in messages)
        self.seen.append(text)
        if "Reasonableness" in text:
            return json.dumps([{"Thought-1": "Add one.", "Reasonableness": 0.5},
                               {"Thought-2": "Add one unless huge.", "Reasonableness": 0.5}])
        body = "x + 1 if x < 10**6 else 0" if "unless huge" in text else "x + 1"
        return f"```python\ndef inc(x):\n    return {body}\n```"


def test_collect_labels_from_private_tests_the_graph_never_sees(tmp_path):
    out = tmp_path / "prm.jsonl"
    model = Recorder()
    added = collect([("mini", TASK)], out, {"gvr_rollouts": 3, "gvr_width": 2, "structured_output": False},
                    model=RespondingChatModel(respond=model))
    assert added == 1 and not any(PRIVATE_MARK in text for text in model.seen)
    records, _ = read_records(out)
    problem = records[-1]
    assert problem["type"] == "problem" and problem["codes"] == 3 and problem["samples"] == 3
    by_node = {r["node"]: r for r in records if r["type"] == "sample"}
    # labels count the 2 private tests the public one does not repeat. n1 "Add one." passes both; n2 "unless
    # huge" fails 10**9 (1 of 2); n3 below n1 repeats n1's program. Labels: n1 = mean(1, 1) = 1, n2 = 1/2, n3 = 1.
    assert by_node["n2"]["label"] == [pytest.approx(1 / 2, abs=1e-5)] and by_node["n1"]["label"] == [1.0]
    assert (problem["label_tests"], problem["private_tests"]) == (2, 3)
    assert covered(out) == {("mini", "T/inc")}
    settings = {"gvr_rollouts": 3, "gvr_width": 2, "structured_output": False}
    assert collect([("mini", TASK)], out, settings, model=RespondingChatModel(respond=model)) == 0
    with pytest.raises(ValueError, match='settings .*"gvr_rollouts": 3.*this run uses .*"gvr_rollouts": 4'):
        collect([("mini", TASK)], out, {**settings, "gvr_rollouts": 4}, model=RespondingChatModel(respond=model))
    stats = label_distribution(out)
    assert stats["problems"] == 1 and stats["steps"] == 4 and stats["one"] == 0.75


def test_mean_label_averages_public_and_private(tmp_path):
    out = tmp_path / "prm.jsonl"
    collect([("mini", TASK)], out, {"gvr_rollouts": 3, "gvr_width": 2, "structured_output": False}, label="mean",
            model=RespondingChatModel(respond=Recorder()))
    by_node = {r["node"]: r for r in read_records(out)[0] if r["type"] == "sample"}
    assert by_node["n2"]["label"] == [pytest.approx((1 + 1 / 2) / 2, abs=1e-5)]


def test_a_problem_whose_private_tests_are_all_public_is_skipped_unsearched(tmp_path):
    """Labels from tests the PRM input's feedback already shows would be no held-out labels."""
    task = Task(TASK.problem, TestSuite.function(["def check(candidate):\n    assert candidate(1) == 2\ncheck(inc)"],
                                                 "inc"), "test")
    model, seen = Recorder(), []
    added = collect([("mini", task)], tmp_path / "prm.jsonl", {"gvr_rollouts": 3},
                    model=RespondingChatModel(respond=model), on_problem=lambda p, i, n: seen.append(p))
    assert added == 0 and not model.seen and seen[0]["skipped"] == "no private tests beyond the public ones"
    # the file records it as drawn and unlabelable, so a rerun does not search it again
    out = tmp_path / "prm.jsonl"
    assert covered(out) == {("mini", "T/inc")} and label_distribution(out)["unlabelable"] == ["mini T/inc"]
    assert collect([("mini", task)], out, {"gvr_rollouts": 3}, model=RespondingChatModel(respond=model),
                   on_problem=lambda p, i, n: seen.append(p)) == 0 and len(seen) == 1


def test_a_problem_cut_short_by_a_kill_is_dropped_and_redone(tmp_path):
    out = tmp_path / "prm.jsonl"
    out.write_text(json.dumps({"type": "sample", "dataset": "mini", "problem_id": "T/inc", "label": [1.0]}) + "\n"
                   + '{"type": "sam')
    assert covered(out) == set() and out.read_text() == ""


def test_a_model_fault_is_left_for_a_rerun_and_an_unlabelable_problem_is_written(tmp_path):
    out, seen = tmp_path / "prm.jsonl", []
    recorder = Recorder()

    def down(messages):
        raise ConnectionError("endpoint down")

    settings = {"gvr_rollouts": 3, "gvr_width": 2, "structured_output": False}
    bare = Task(TASK.problem, None, "test")
    added = collect([("mini", TASK), ("bare", bare)], out, settings, model=RespondingChatModel(respond=down),
                    on_problem=lambda problem, i, n: seen.append(problem))
    assert added == 0 and "endpoint down" in seen[0]["skipped"]
    assert seen[1]["skipped"] == "no private tests beyond the public ones" and covered(out) == {("bare", "T/inc")}
    assert collect([("mini", TASK)], out, settings, model=RespondingChatModel(respond=recorder)) == 1
    assert covered(out) == {("mini", "T/inc"), ("bare", "T/inc")}
    with pytest.raises(ValueError, match="label_source private, this run uses mean"):
        collect([("mini", TASK)], out, settings, label="mean", model=RespondingChatModel(respond=recorder))


def test_a_problem_that_raises_is_left_for_a_rerun_and_the_rest_go_on(tmp_path, monkeypatch):
    out, seen = tmp_path / "prm.jsonl", []
    other = Task({**TASK.problem, "id": "T/inc2"}, TASK.private_tests, "test")
    label = prm_data.code_scores

    def sandbox_fails_once(nodes, task, *args, **kwargs):
        if not seen:
            raise OSError("sandbox gone")
        return label(nodes, task, *args, **kwargs)

    monkeypatch.setattr(prm_data, "code_scores", sandbox_fails_once)
    settings = {"gvr_rollouts": 2, "gvr_width": 2, "structured_output": False}
    added = collect([("mini", TASK), ("mini", other)], out, settings, model=RespondingChatModel(respond=Recorder()),
                    on_problem=lambda problem, i, n: seen.append(problem))
    assert added == 1 and seen[0]["skipped"] == "raised OSError: sandbox gone" and "skipped" not in seen[1]
    assert covered(out) == {("mini", "T/inc2")}
    assert collect([("mini", TASK), ("mini", other)], out, settings, model=RespondingChatModel(respond=Recorder())) == 1
    assert covered(out) == {("mini", "T/inc"), ("mini", "T/inc2")}


def test_stats_count_finished_problems_only_and_stay_within_the_labels(tmp_path):
    out = tmp_path / "prm.jsonl"
    sample = {"type": "sample", "dataset": "mini", "problem_id": "T/inc", "label": [0.0, 1.0]}
    out.write_text("".join(json.dumps(r) + "\n" for r in (
        sample, {"type": "problem", "dataset": "mini", "problem_id": "T/inc"},
        {**sample, "problem_id": "T/killed", "label": [0.5, 0.5, 0.5]})))
    stats = label_distribution(out)
    assert (stats["problems"], stats["samples"], stats["steps"]) == (1, 1, 2)
    assert stats["quartiles"] == [0.25, 0.5, 0.75] and stats["mean"] == 0.5


def test_a_file_of_an_older_format_is_not_appended_to(tmp_path):
    out = tmp_path / "prm.jsonl"
    out.write_text(json.dumps({"type": "problem", "format": "codeforest-prm/1", "dataset": "mini",
                               "problem_id": "T/inc"}) + "\n")
    with pytest.raises(ValueError, match="format codeforest-prm/1, this version writes codeforest-prm/5"):
        covered(out)


def test_cli_needs_an_out_file_and_prints_stats(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["collect-prm", "--dataset", "humaneval"])
    assert exit_.value.code == 2 and "--out" in capsys.readouterr().err
    out = tmp_path / "prm.jsonl"
    assert cli.main(["collect-prm", "--out", str(out), "--stats"]) == 2
    assert f"no data file {out}" in " ".join(capsys.readouterr().err.split())
    out.write_text(json.dumps({"type": "sample", "label": [0.0, 1.0]}) + "\n" + json.dumps({"type": "problem"}) + "\n")
    assert cli.main(["collect-prm", "--out", str(out), "--stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["steps"] == 2 and stats["zero"] == 0.5 and stats["histogram"]["[0.8,1.0]"] == 1


def test_the_cli_reports_a_skip_whose_message_holds_brackets_and_goes_on(fixtures, tmp_path, monkeypatch, capsys):
    """An exception's text is printed as it is, not read as rich markup (a stray "[/x]" would raise)."""
    def raises(*args, **kwargs):
        raise RuntimeError("bad [/x] value [type=int]")

    monkeypatch.setattr(prm_data, "solve", raises)
    out = tmp_path / "prm.jsonl"
    assert cli.main(["collect-prm", "--dataset", str(fixtures / "functions.jsonl"), "--limit", "2",
                     "--out", str(out)]) == 3  # the data is incomplete: a script learns it from the status
    err = " ".join(capsys.readouterr().err.split())
    assert err.count("raised RuntimeError: bad [/x] value [type=int]") == 2 and "added 0 problems" in err
    assert "2 problem(s) not collected (functions Mini/1, functions Mini/2): a rerun collects them" in err


def test_collection_labels_every_code_whatever_selector_the_environment_names(tmp_path, monkeypatch):
    """The final pick is unused, so a selector set for bench runs spends no Tester calls here."""
    monkeypatch.setenv("CODEFOREST_SELECTOR", "codet")
    model = Recorder()  # two programs pass the public test: a selector would ask the Tester to tell them apart
    settings = {"gvr_rollouts": 3, "gvr_width": 2, "structured_output": False}
    assert collect([("mini", TASK)], tmp_path / "prm.jsonl", settings, model=RespondingChatModel(respond=model)) == 1
    assert model.seen and not any("You write test inputs" in text for text in model.seen)


def test_the_output_folder_is_made(tmp_path):
    out = tmp_path / "new" / "prm.jsonl"
    settings = {"gvr_rollouts": 1, "gvr_width": 1, "structured_output": False}
    assert collect([("mini", TASK)], out, settings, model=RespondingChatModel(respond=Recorder())) == 1


def test_labels_of_a_function_problem_count_its_private_asserts_one_by_one(data_dir, tmp_path):
    """MBPP/11's private test is one check of 3 asserts, the first its public test: a program passing the public
    one and one of the other two is labelled 1/2 (the held-out asserts one by one), not 0 and not 2/3."""
    task = load_problem("mbpp500", "MBPP/11", data_dir)
    partly = '```python\ndef remove_Occ(s, ch):\n    return {"hello": "heo", "abcda": "bcd"}.get(s, "")\n```'
    out = tmp_path / "prm.jsonl"
    settings = {"gvr_rollouts": 1, "gvr_width": 1, "structured_output": False}
    assert collect([("mbpp500", task)], out, settings, model=RespondingChatModel(respond=lambda m: partly)) == 1
    samples = [r for r in read_records(out)[0] if r["type"] == "sample"]
    assert [s["label"] for s in samples] == [[pytest.approx(1 / 2, abs=1e-5)]]


def test_the_cli_says_what_it_collects_and_what_it_is_searching_while_a_search_runs(fixtures, tmp_path, monkeypatch,
                                                                                     capsys):
    """A log file, not a terminal: a start line, then a line naming the problem in flight and its calls so far."""
    import functools
    import time

    from codeforest.cli import common, prm
    from codeforest.tools import stopwatch

    def searches(*args, **kwargs):
        with stopwatch.timed(stopwatch.MODEL):  # one answered model call
            pass
        time.sleep(0.5)
        raise RuntimeError("stop here")

    monkeypatch.setattr(prm_data, "solve", searches)
    monkeypatch.setattr(prm, "heartbeat", functools.partial(common.heartbeat, log_every_s=0.1))
    out = tmp_path / "prm.jsonl"
    assert cli.main(["collect-prm", "--dataset", str(fixtures / "functions.jsonl"), "--limit", "1",
                     "--out", str(out)]) == 3
    err = " ".join(capsys.readouterr().err.split())
    assert f"collect-prm: 1 problems of functions, model local; data in {out}" in err
    assert "in flight: collect-prm functions Mini/1 (1 calls, 0 min)" in err
    assert err.index("in flight") < err.index("Mini/1: skipped (raised RuntimeError: stop here)")


def test_problems_are_searched_at_once_and_each_is_written_whole(tmp_path):
    """With concurrency 2 both searches wait on each other's first call (one at a time, the barrier breaks)."""
    import threading

    other = Task({**TASK.problem, "id": "T/inc2"}, TASK.private_tests, "test")
    both_started = threading.Barrier(2, timeout=10)
    calls, lock = [], threading.Lock()
    recorder = Recorder()

    def respond(messages):
        with lock:
            calls.append(len(calls))
            first_two = len(calls) <= 2
        if first_two:
            both_started.wait()
        return recorder(messages)

    out, seen = tmp_path / "prm.jsonl", []
    settings = {"gvr_rollouts": 3, "gvr_width": 2, "structured_output": False}
    added = collect([("mini", TASK), ("mini", other)], out, settings, model=RespondingChatModel(respond=respond),
                    on_problem=lambda problem, i, n: seen.append((problem["problem_id"], i, n)), concurrency=2)
    assert added == 2 and sorted(p for p, _, _ in seen) == ["T/inc", "T/inc2"]
    assert [(i, n) for _, i, n in seen] == [(1, 2), (2, 2)]  # counted as they finish
    assert covered(out) == {("mini", "T/inc"), ("mini", "T/inc2")}
    records, _ = read_records(out)
    # each problem's samples come right before its own problem line, never interleaved with the other's
    for end in (i for i, r in enumerate(records) if r["type"] == "problem"):
        problem_id = records[end]["problem_id"]
        run = records[max(0, end - records[end]["samples"]):end]
        assert len(run) == 3 and all(r["type"] == "sample" and r["problem_id"] == problem_id for r in run)
        assert sorted(r["label"][0] for r in run) == [0.5, 1.0, 1.0]


def test_the_cli_searches_as_many_problems_at_once_as_the_embedded_server_has_slots(fixtures, tmp_path,
                                                                                      monkeypatch):
    seen = {}

    def collect_at(tasks, out, context, **kwargs):
        seen.update(concurrency=kwargs["concurrency"], slots=context.server_slots)
        return 0

    monkeypatch.setattr(prm_data, "collect", collect_at)
    assert cli.main(["collect-prm", "--dataset", str(fixtures / "functions.jsonl"), "--limit", "1",
                     "--concurrency", "3", "--out", str(tmp_path / "prm.jsonl")]) == 0
    assert seen == {"concurrency": 3, "slots": 3}


def test_a_second_collection_into_the_same_file_stops_naming_the_holder(fixtures, tmp_path, monkeypatch, capsys):
    """Two processes appending the same problems would write each one twice."""
    searched = []
    monkeypatch.setattr(prm_data, "solve", lambda *args, **kwargs: searched.append(args) or {})
    out = tmp_path / "prm.jsonl"
    with held(tmp_path / "prm.jsonl.lock", "held", "or not"):
        assert cli.main(["collect-prm", "--dataset", str(fixtures / "functions.jsonl"), "--limit", "1",
                         "--out", str(out)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{out} is being written by another codeforest collect-prm (pid {os.getpid()})" in err
    assert not searched and not out.exists()
    monkeypatch.undo()  # released when the holder is done: the next collection runs
    settings = {"gvr_rollouts": 1, "gvr_width": 1, "structured_output": False}
    assert collect([("mini", TASK)], out, settings, model=RespondingChatModel(respond=Recorder())) == 1
