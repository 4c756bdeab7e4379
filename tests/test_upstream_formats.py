"""The loaders of upstream formats on the project's own fixtures in their exact shape: EvalPlus's HumanEval+ and
MBPP+ releases (gzipped JSONL) and LiveCodeBench's ``code_generation_lite`` rows (JSON strings, pickled private
tests); EvalPlus's scoring; the restricted unpickler."""

from __future__ import annotations

import base64
import json
import os
import pickle
import zlib

import pytest

from codeforest import evalplus
from codeforest.livecodebench import PickleRefused, decode_tests, unpickle_string
from codeforest.loading import load_dataset, released_between
from codeforest.problems import DatasetError
from codeforest.scoring import score_plus, score_private


def test_humaneval_plus_public_base_and_plus_suites(upstream, monkeypatch):
    calls = []
    real_run = evalplus.run
    monkeypatch.setattr(evalplus, "run",
                        lambda code, tests, **kw: calls.append(tests.kind) or real_run(code, tests, **kw))
    # the reference solutions answer wrongly in the framework's process: right answers prove they ran in the sandbox
    monkeypatch.setenv("EVALPLUS_FIXTURE_IN_FRAMEWORK", "1")
    tasks = {t.id: t for t in load_dataset("humaneval_plus", upstream)}
    assert list(tasks) == ["HumanEval/900", "HumanEval/901"] and calls == ["calls"] * 4  # base and plus, each
    count = tasks["HumanEval/901"]
    assert count.problem["public_tests"] == ["assert count_up(3) == [0, 1, 2]"]
    assert len(count.private_tests) == 2 and len(count.plus_tests) == 4
    assert all(limit == evalplus.MIN_TIME_LIMIT + evalplus.CHECK_SLACK_S for limit in count.plus_tests.timeouts)
    assert (upstream / "HumanEvalPlus-v0.1.10.jsonl.gz.expected.jsonl").is_file()
    right = "def count_up(n):\n    return list(range(n))\n"
    base_only = "def count_up(n):\n    return list(range(n)) if n < 10 else []\n"  # right on the base inputs only
    assert score_private(count, right).passed and score_plus(count, right).passed
    assert score_private(count, base_only).passed is True
    plus = score_plus(count, base_only)
    assert plus.passed is False and plus.pass_rate == 0.5  # both plus inputs are 10 or more
    calls.clear()
    assert len(load_dataset("humaneval_plus", upstream)) == 2 and calls == []  # expected outputs kept: no rerun


def test_evalplus_tolerance_oracles_and_time_limits(upstream):
    scale = {t.id: t for t in load_dataset("humaneval_plus", upstream)}["HumanEval/900"]
    near = "def scale(xs, k):\n    return [x * k + 1e-9 for x in xs]\n"  # within the 1e-6 EvalPlus sets for floats
    far = "def scale(xs, k):\n    return [x * k + 1e-3 for x in xs]\n"
    assert score_plus(scale, near).passed and not score_plus(scale, far).passed
    slow = "def scale(xs, k):\n    import time\n    time.sleep(1.5)\n    return [x * k for x in xs]\n"
    result = score_private(scale, slow)  # each call within max(1 s, 4 x the reference's time)
    assert result.passed is False and result.pass_rate == 0.0
    mbpp = {t.id: t for t in load_dataset("mbpp_plus", upstream)}
    shared, half = mbpp["Mbpp/2"], mbpp["Mbpp/900"]
    assert shared.problem["public_tests"] == ["assert set(similar_elements((1, 2, 3), (3, 2, 9))) == set((2, 3))"]
    reordered = ("def similar_elements(a, b):\n    assert type(a) is tuple\n"
                 "    return tuple(sorted(set(a) & set(b), reverse=True))\n")
    assert score_plus(shared, reordered).passed  # MBPP+'s set-equal oracle, inputs turned into tuples as EvalPlus does
    assert score_plus(half, "def half(x):\n    return x / 2 + 5e-5\n").passed  # the row's atol 1e-4
    assert not score_plus(half, "def half(x):\n    return x // 2\n").passed


def test_livecodebench_rows_functions_stdio_dates_and_limits(upstream):
    tasks = load_dataset("livecodebench_v2", upstream)
    assert [t.id for t in tasks] == ["LCB/9001", "LCB/abc900_a", "LCB/1900_B"]
    assert [t.problem["kind"] for t in tasks] == ["function", "stdio", "stdio"]
    assert [t.released for t in tasks] == ["2023-08-20", "2024-03-02", "2024-09-15"]
    leet, atcoder, _ = tasks
    assert leet.problem["entry_point"] == "sumLargest" and "class Solution:" in leet.problem["prompt"]
    assert leet.problem["public_tests"] == ["assert Solution().sumLargest([4, 1, 3], 2) == 7"]
    assert len(leet.private_tests) == 4 and set(leet.private_tests.timeouts) == {6.0}  # public + 3 pickled private
    assert atcoder.problem["public_tests"] == [{"input": "3\n", "output": "6\n"}] and len(atcoder.private_tests) == 3
    program = ("class Solution:\n    def sumLargest(self, nums: List[int], k: int) -> int:\n"
               "        return sum(sorted(nums)[-k:])\n")
    assert score_private(leet, "from typing import *\n\n" + program).passed
    assert not score_private(leet, program.replace("[-k:]", "[:k]")).passed
    assert score_private(atcoder, "print(2 * int(input()))").passed
    assert len(load_dataset("livecodebench_v1", upstream)) == 2  # release_v1 reads test.jsonl alone
    assert [t.id for t in released_between(tasks, "2024-01-01", "2024-03-02")] == ["LCB/abc900_a"]
    with pytest.raises(DatasetError, match="no contest dates"):
        released_between(load_dataset("mbpp_plus", upstream), "2024-01-01", None)


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_malicious_pickle_is_refused_without_running_anything(tmp_path):
    marker = tmp_path / "ran"
    for evil in (_Payload(marker), [{"input": "1", "output": "1"}]):  # code, and anything but a plain string
        blob = base64.b64encode(zlib.compress(pickle.dumps(evil))).decode()
        with pytest.raises(PickleRefused):
            decode_tests(blob)
    assert not marker.exists()
    text = json.dumps([{"input": "1", "output": "2"}])
    assert unpickle_string(pickle.dumps(text)) == text
    with pytest.raises(PickleRefused, match="cannot be read"):
        unpickle_string(b"not a pickle")


def test_a_finished_humaneval_and_mbpp_run_is_rescored_on_the_plus_tests_without_a_model(upstream, tmp_path, capsys):
    from codeforest.cli import main

    out = tmp_path / "run"
    out.mkdir()
    right, base_only = "def count_up(n):\n    return list(range(n))\n", \
        "def count_up(n):\n    return list(range(n)) if n < 10 else []\n"
    records = [{"problem_id": "HumanEval/901", "graph": graph, "model": "m", "dataset": "humaneval", "settings": {},
                "final_code": code, "private_passed": True, "private_pass_rate": 1.0, "error": None}
               for graph, code in (("direct", base_only), ("codetree", right))]
    records.append({"problem_id": "MBPP/900", "graph": "direct", "model": "m", "dataset": "mbpp500", "settings": {},
                    "final_code": "def half(x):\n    return x // 2\n", "private_passed": True,
                    "private_pass_rate": 1.0, "error": None})
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["bench", "--rescore-plus", "--out", str(out), "--data-dir", str(upstream)]) == 0
    rows = {(r["problem_id"], r["plus_passed"]) for r in map(json.loads, (out / "plus.jsonl").read_text().splitlines())}
    assert rows == {("HumanEval/901", False), ("HumanEval/901", True), ("Mbpp/900", False)}
    assert "3 distinct final programs" in " ".join(capsys.readouterr().err.split())
    report = (out / "report.md").read_text()
    assert "plus pass@1 (95% CI)" in report and "| codetree | m |" in report
    codetree = next(line for line in report.splitlines() if line.startswith("| codetree |"))
    direct = next(line for line in report.splitlines() if line.startswith("| direct |"))
    assert "| 100.0 (20.7-100.0) | 100.0 (20.7-100.0) |" in codetree and "| 100.0 (34.2-100.0) | 0.0 (0.0-65.8) |" \
        in direct  # direct: base pass@1 of its 2 problems beside their plus pass@1


def test_livecodebench_private_tests_are_read_only_when_a_problem_is_scored(upstream):
    rows = [json.loads(line) for line in (upstream / "livecodebench" / "test.jsonl").read_text().splitlines()]
    rows[1]["private_test_cases"] = "not base64 at all!"  # a broken row costs only its own problem
    (upstream / "livecodebench" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    leet, broken = load_dataset("livecodebench_v1", upstream)
    assert len(leet.private_tests) == 4 and broken.problem["public_tests"][0]["input"] == "3\n"
    with pytest.raises(DatasetError, match="neither JSON nor base64"):
        len(broken.private_tests)
