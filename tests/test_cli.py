"""The command line against an OpenAI-compatible endpoint (a scripted one): output, scoring, errors."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

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


def test_solve_prices_each_models_tokens(endpoint, capsys):
    """One call of 11 + 7 tokens at 2 per million: 36e-6, in the JSON and on the human line; no price, no cost."""
    code, captured = _solve(endpoint(GOOD).url, capsys, "--price", "fake-coder=2")
    result = json.loads(captured.out)
    assert code == 0 and result["spent"] == pytest.approx(36e-6)
    assert result["cost"]["models"] == {"fake-coder": {"llm_calls": 1, "prompt_tokens": 11, "completion_tokens": 7}}
    assert json.loads(_solve(endpoint(GOOD).url, capsys)[1].out)["spent"] is None
    assert main(["solve", "--dataset", "humaneval", "--problem", "HumanEval/0", "--base-url", endpoint(GOOD).url,
                 "--model", "fake-coder", "--price", "fake-coder=2"]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # as a terminal of any width wraps it
    assert "per model: fake-coder: 1 calls, 11+7 tokens; cost 3.6e-05 in the price table's unit" in shown


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
    (tmp_path / "empty.jsonl").write_text("\n")
    assert main(["solve", "--problem-file", str(tmp_path / "empty.jsonl")]) == 2
    assert capsys.readouterr().err.strip().endswith("empty.jsonl holds no problem")
    for flag in ("--limit", "--sample", "--concurrency"):
        with pytest.raises(SystemExit) as stopped:
            main(["bench", "--graph", "direct", "--dataset", "humaneval", flag, "-1"])
        assert stopped.value.code == 2 and f"{flag}: must be at least 1, not -1" in capsys.readouterr().err
    out = tmp_path / "bench-run"
    for argv in (["solve", "--dataset", "humaneval", "--problem", "0", "--model", "gpt-4o"],
                 ["bench", "--graph", "direct", "--dataset", "humaneval", "--limit", "1", "--model", "gpt-4o",
                  "--out", str(out)]):  # a model with neither an endpoint nor a file: refused before any problem
        assert main(argv) == 2
        error = capsys.readouterr().err
        assert "'gpt-4o' is not an embedded model or a .gguf file; give its endpoint with --base-url" in error
        assert "(embedded)" not in error and not out.exists()
    for command, flag, value in [("check", "--timeout", "inf"), ("check", "--timeout", "-1"),
                                 ("check", "--timeout", "nan"), ("check", "--timeout", "0"),
                                 ("solve", "--request-timeout", "1e12"), ("solve", "--timeout", "0")]:
        with pytest.raises(SystemExit) as stopped:
            main([command, *(["prog.py"] if command == "check" else []), "--dataset", "humaneval", flag, value])
        assert stopped.value.code == 2
        assert f"{flag}: must be above 0 and at most 1,000,000 seconds, not {value}" in capsys.readouterr().err
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "solver.yaml").write_text("inputs: []\ntemplates:\n  user: 'Solve {problem}'\n")
    assert main(["solve", "--dataset", "humaneval", "--problem", "0", "--prompts-dir", str(tmp_path / "prompts"),
                 "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "uses {problem} but 'inputs' does not declare it" in capsys.readouterr().err
    (tmp_path / "prompts" / "solver.yaml").write_text("inputs: [problme]\ntemplates:\n  user: 'Solve {problme}'\n")
    assert main(["solve", "--dataset", "humaneval", "--problem", "0", "--prompts-dir", str(tmp_path / "prompts"),
                 "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert ("solver.yaml: 'inputs' declares problme, which the code does not fill in this prompt; it fills problem, "
            "hint, thoughts") in " ".join(capsys.readouterr().err.split())


def test_a_wrong_setting_is_one_line_naming_the_setting(capsys, monkeypatch):
    solve = ["solve", "--dataset", "humaneval", "--problem", "0", "--base-url", "http://127.0.0.1:9/v1"]
    assert main([*solve, "--temperature", "5", "--retries", "-1"]) == 2
    error = capsys.readouterr().err
    assert error == ("error: temperature: Input should be less than or equal to 2; retries: Input should be greater "
                     "than or equal to 0\n")
    assert main([*solve, "--base-url", "user:pw@host/v1"]) == 2  # the last --base-url wins
    assert capsys.readouterr().err == ("error: base_url must be an http:// or https:// URL, such as "
                                       "http://127.0.0.1:8000/v1\n")  # not echoed: it may hold a password
    monkeypatch.setenv("CODEFOREST_SANDBOX", "nope")
    assert main(solve) == 2
    assert capsys.readouterr().err == ("error: CODEFOREST_SANDBOX='nope' is not a valid sandbox: Input should be "
                                       "'local' or 'e2b'\n")


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
    assert all(row["median_ms"] > 0 for row in report["rows"])


def test_check_on_e2b_without_a_key_is_one_clear_line(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    program = tmp_path / "prog.py"
    program.write_text("def has_close_elements(numbers, threshold):\n    return False\n")
    assert main(["check", str(program), "--dataset", "humaneval", "--problem", "0", "--backend", "e2b"]) == 2
    assert "set E2B_API_KEY" in capsys.readouterr().err


def test_more_command_line_mistakes_are_one_clear_line(capsys, tmp_path):
    """A missing file named on the command line, an empty number list, a record without its target file."""
    assert main(["check", str(tmp_path / "missing.py"), "--dataset", "humaneval", "--problem", "0"]) == 2
    assert "missing.py" in capsys.readouterr().err
    for args in (["kb", "build", "--from-steps", str(tmp_path / "typo.jsonl"), "--out", str(tmp_path / "kb")],
                 ["kb", "retopic", "--steps", str(tmp_path / "typo.jsonl")],
                 ["kb", "sanity", "--steps", str(tmp_path / "typo.jsonl"), "--kb", str(tmp_path / "kb")]):
        assert main(args) == 2
        assert f"No steps file {tmp_path / 'typo.jsonl'}" in capsys.readouterr().err
    assert not (tmp_path / "kb").exists()  # no empty knowledge base was made
    assert main(["kb", "build", "--from", "mbpp_typo", "--out", str(tmp_path / "kb"), "--data-dir", str(tmp_path)]) == 2
    assert "Dataset 'mbpp_typo' with reference solutions not found" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "kb").exists()
    with pytest.raises(SystemExit) as stopped:
        main(["bench-concurrency", "--concurrency", ","])
    assert stopped.value.code == 2 and "',' holds no number" in capsys.readouterr().err
    assert main(["bench-model", "--record", "--graph", "direct", "--problems", "HumanEval/0"]) == 2
    assert "--record needs --graph, --problems and --calls FILE" in capsys.readouterr().err


def test_a_model_fault_outside_a_search_is_one_clear_line(capsys, tmp_path, monkeypatch):
    from codeforest.agents.base import ModelFault

    steps = tmp_path / "steps.jsonl"
    steps.write_text(json.dumps({"id": "MBPP/1", "source": "mbpp500", "steps": ["a"], "topic": "Other"}) + "\n")

    def down(*args, **kwargs):
        raise ModelFault("the model endpoint did not answer after 3 tries", {})

    monkeypatch.setattr("codeforest.kb.retopic", down)
    assert main(["kb", "retopic", "--steps", str(steps), "--base-url", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err
    assert "error: the model endpoint did not answer after 3 tries" in err and "Traceback" not in err


def test_a_problem_file_takes_a_bare_number_as_a_dataset_does(endpoint, capsys, tmp_path):
    rec = {"prompt": "def inc(x):\n    \"\"\"Add one.\"\"\"\n", "entry_point": "inc",
           "given_tests": ["assert inc(1) == 2"]}
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps({**rec, "task_id": f"Mine/{i}"}) + "\n" for i in (1, 2)))
    api = endpoint("```python\ndef inc(x):\n    return x + 1\n```")
    assert main(["solve", "--problem-file", str(path), "--problem", "2", "--base-url", api.url, "--model", "m",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["problem_id"] == "Mine/2"


def test_check_gives_private_tests_the_harness_time_limit(capsys, tmp_path, monkeypatch):
    import codeforest.tools.sandbox as sandbox

    limits, real_run = [], sandbox.run

    def recording_run(code, suite, *, timeout, backend=None):
        limits.append(timeout)
        return real_run(code, suite, timeout=timeout, backend=backend)

    monkeypatch.setattr(sandbox, "run", recording_run)
    program = tmp_path / "prog.py"
    program.write_text("def has_close_elements(numbers, threshold):\n    return False\n")
    main(["check", str(program), "--dataset", "humaneval", "--problem", "0", "--private", "--json"])
    main(["check", str(program), "--dataset", "humaneval", "--problem", "0", "--private", "--timeout", "2", "--json"])
    assert limits == [5.0, 10.0, 2.0, 2.0]


def test_the_default_results_folder_keeps_a_model_name_whole():
    from codeforest.cli.bench import model_label

    assert model_label("qwen2.5-coder:7b") == "qwen2.5-coder-7b"
    assert model_label("gpt-4.1") != model_label("gpt-4.5")
    assert model_label("Qwen/Qwen2.5-Coder-7B-Instruct") == "Qwen-Qwen2.5-Coder-7B-Instruct"
    assert model_label("~/models/coder.Q4_K_M.gguf") == "coder.Q4_K_M" and model_label("local") == "local"


def test_solve_describes_an_mcts_selection_by_its_path():
    from codeforest.cli.solve import describe_event

    assert describe_event({"event": "selected", "node": "n5", "path": ["n1", "n5"]}) == \
        "selected node n5 by the path n1 > n5"
    assert describe_event({"event": "selected", "node": "n2", "round": 1, "passed": 1, "total": 2, "best": "n2"}) == \
        "round 1: chose node n2 (1/2 public tests), best so far n2"


def test_a_command_line_mistake_is_the_error_and_where_help_is_not_the_usage_block(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "--graph", "nope", "--dataset", "humaneval"])
    lines = capsys.readouterr().err.splitlines()
    assert stopped.value.code == 2 and len(lines) == 2
    assert lines[0].startswith("codeforest bench: error: argument --graph: invalid choice: 'nope'")
    assert lines[1] == "see: codeforest bench --help"
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    name, number = capsys.readouterr().out.split()
    assert name == "codeforest" and number[0].isdigit()


def test_help_and_a_bad_flag_load_no_heavy_library():
    """--help of every command, and a refused flag, answer without LangGraph, LangChain, the model clients, the
    knowledge base's embeddings or pydantic: the command that runs imports what it needs (the time itself is
    measured by `codeforest bench-startup`, not here)."""
    code = ("import sys\nfrom codeforest.cli import build_parser, main\n"
            "names = [a for a in build_parser()._actions if a.dest == 'command'][0].choices\n"
            "refused = ['solve', '--dataset', 'x', '--no-such-flag']\n"
            "for argv in [['--help'], *[[n, '--help'] for n in names], refused]:\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    loaded = set(ast.literal_eval(done.stderr.strip().splitlines()[-1]))
    assert "serve" in done.stdout and "--no-such-flag" in done.stderr  # the helps were printed, the flag refused
    light = {"__main__", "codeforest", "rich", "typing_extensions", "_distutils_hack"}
    assert {m for m in loaded if not m.startswith("__editable__")} <= light, loaded
