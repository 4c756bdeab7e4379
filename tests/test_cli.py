"""The command line against an OpenAI-compatible endpoint (a scripted one): output, scoring, errors."""

from __future__ import annotations

import json

import pytest

from codeforest.cli import main
from tests.fake_openai import FakeOpenAI

GOOD = """```python
from typing import List

def has_close_elements(numbers: List[float], threshold: float) -> bool:
    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])
```"""
OVERFIT = """```python
def has_close_elements(numbers, threshold):
    return threshold == 0.3
```"""


@pytest.fixture
def endpoint():
    servers = []

    def start(*replies):
        servers.append(FakeOpenAI(list(replies)))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _solve(endpoint_url, capsys, *extra):
    code = main(["solve", "--dataset", "humaneval", "--problem", "HumanEval/0", "--base-url", endpoint_url,
                 "--model", "fake-coder", "--json", *extra])
    captured = capsys.readouterr()
    return code, captured


def test_json_result_with_private_score(endpoint, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-secret")
    api = endpoint(GOOD)
    code, captured = _solve(api.url, capsys)
    assert code == 0
    result = json.loads(captured.out)
    assert result["private_passed"] is True and result["public_pass_rate"] == 1.0
    assert result["stop_reason"] == "passed_public_tests"
    assert set(result["cost"]) >= {"llm_calls", "prompt_tokens", "completion_tokens", "programs", "sandbox_runs",
                                   "wall_s"}
    assert result["cost"]["prompt_tokens"] == 11 and result["cost"]["completion_tokens"] == 7
    assert api.requests[0]["model"] == "fake-coder"
    headers = {k.lower(): v for k, v in api.headers[0].items()}
    assert headers["authorization"] == "Bearer sk-live-secret"
    assert "sk-live-secret" not in captured.out + captured.err


def test_public_pass_but_private_fail_is_reported(endpoint, capsys):
    api = endpoint(OVERFIT)
    code, captured = _solve(api.url, capsys)
    result = json.loads(captured.out)
    assert result["public_pass_rate"] == 1.0 and result["private_passed"] is False  # overfit to public tests
    private_lines = "assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
    assert private_lines not in json.dumps(api.requests), "a private test reached the model"


def test_problem_file_and_human_output(endpoint, capsys, tmp_path):
    record = {"task_id": "Mine/1", "prompt": "def inc(x):\n    \"\"\"Add one.\"\"\"\n", "entry_point": "inc",
              "given_tests": ["assert inc(1) == 2"]}
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(record) + "\n")
    api = endpoint("```python\ndef inc(x):\n    return x + 1\n```")
    assert main(["solve", "--problem-file", str(path), "--base-url", api.url, "--model", "m"]) == 0
    out = capsys.readouterr().out
    assert "Mine/1" in out and "private tests: unknown" in out and "return x + 1" in out


def test_errors_are_one_clear_line(capsys, tmp_path):
    assert main(["solve", "--dataset", "humaneval", "--problem", "HumanEval/999"]) == 2
    assert "No problem 'HumanEval/999'" in capsys.readouterr().err
    path = tmp_path / "two.jsonl"
    rec = {"task_id": "A", "prompt": "p", "entry_point": "f", "given_tests": []}
    path.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "task_id": "B"}) + "\n")
    assert main(["solve", "--problem-file", str(path), "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "holds 2 problems" in capsys.readouterr().err
    assert main(["solve", "--problem-file", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl does not exist" in capsys.readouterr().err
    for flag in ("--limit", "--sample", "--concurrency"):
        with pytest.raises(SystemExit) as stopped:
            main(["bench", "--graph", "direct", "--dataset", "humaneval", flag, "-1"])
        assert stopped.value.code == 2 and f"{flag}: must be at least 1, not -1" in capsys.readouterr().err
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "solver.yaml").write_text("inputs: []\ntemplates:\n  user: 'Solve {problem}'\n")
    assert main(["solve", "--dataset", "humaneval", "--problem", "0", "--prompts-dir", str(tmp_path / "prompts"),
                 "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "uses {problem} but 'inputs' does not declare it" in capsys.readouterr().err


def test_check_reports_each_test_with_a_reason(capsys, tmp_path):
    program = tmp_path / "prog.py"
    program.write_text("def has_close_elements(numbers, threshold):\n"
                       "    if threshold == 0.5:\n        while True:\n            pass\n    return threshold == 0.3\n")
    code = main(["check", str(program), "--dataset", "humaneval", "--problem", "HumanEval/0", "--private",
                 "--timeout", "1", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and (report["passed"], report["total"]) == (1, 3)
    assert [(o["suite"], o["reason"]) for o in report["outcomes"]] == [
        ("public", "timeout"), ("public", None), ("private", "wrong answer")]


def test_check_human_output_shows_the_failing_line(capsys, tmp_path):
    program = tmp_path / "prog.py"
    program.write_text("def has_close_elements(numbers, threshold):\n    return 1 / 0\n")
    assert main(["check", str(program), "--dataset", "humaneval", "--problem", "0"]) == 1
    out = capsys.readouterr().out
    assert "0/2 tests passed" in out and "return 1 / 0" in out and "ZeroDivisionError" in out


def test_bench_sandbox_reports_each_runner_against_bare_python(capsys):
    assert main(["bench-sandbox", "--repeat", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    runners = [row["runner"] for row in report["rows"]]
    assert runners == ["bare python -c", "sandbox, rlimits only", "sandbox, bwrap + rlimits"]
    assert report["rows"][0]["ratio"] == 1.0 and all(row["median_ms"] > 0 for row in report["rows"])


def test_check_on_e2b_without_a_key_is_one_clear_line(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    program = tmp_path / "prog.py"
    program.write_text("def has_close_elements(numbers, threshold):\n    return False\n")
    assert main(["check", str(program), "--dataset", "humaneval", "--problem", "0", "--backend", "e2b"]) == 2
    assert "set E2B_API_KEY" in capsys.readouterr().err
