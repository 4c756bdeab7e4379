"""The committed measurements still come from the code: problems of committed rows, run again from their folder's
response cache with no model behind it (a call the cache does not hold fails on a closed port), make the same calls
and return the same program. A change to what a graph asks fails here until its rows are measured again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from codeforest.cli import main
from codeforest.tools import models

MEASUREMENTS = Path(__file__).resolve().parent.parent / "measurements"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"  # the embedded default the rows ran on

# (folder, dataset, graph, problems): the longest searches of rows the code reproduces whole (replay_check.py)
ROWS = [
    ("humaneval-fair-1.5b", "humaneval", "codetree", ["HumanEval/119", "HumanEval/26"]),
    ("humaneval-fair-1.5b", "humaneval", "bester", ["HumanEval/26", "HumanEval/91"]),
    ("humaneval-fair-1.5b", "humaneval", "rethink_mcts", ["HumanEval/139"]),
    ("apps-intro-1.5b", "apps_introductory150", "codetree", ["APPS/4656"]),
    ("apps-intro-1.5b", "apps_introductory150", "bester", ["APPS/4656"]),
]


@pytest.fixture
def no_model(monkeypatch):
    """The embedded model's name, with its server's address a closed port of 127.0.0.1."""
    monkeypatch.setattr(models, "local_model_file", lambda model, progress=None: Path("/nowhere") / MODEL_FILE)
    monkeypatch.setattr(models, "embedded_server", lambda *args, **kwargs: SimpleNamespace(base_url="http://127.0.0.1:9"))


def committed(folder: str, graph: str) -> dict[str, dict]:
    """The row's records at its defaults, by problem."""
    records = [json.loads(line) for line in open(MEASUREMENTS / folder / "results.jsonl", encoding="utf-8")]
    return {r["problem_id"]: r for r in records if r["graph"] == graph and not r.get("settings")}


@pytest.mark.parametrize("folder, dataset, graph, problems", ROWS, ids=[f"{r[0]}-{r[2]}" for r in ROWS])
def test_a_committed_row_replays_from_its_cache(data_dir, no_model, tmp_path, folder, dataset, graph, problems):
    cache = tmp_path / "responses.sqlite"
    shutil.copy(MEASUREMENTS / folder / "responses.sqlite", cache)
    main(["bench", "--graph", graph, "--dataset", dataset, "--problems", ",".join(problems), "--model", "local",
          "--cache", str(cache), "--out", str(tmp_path / "out"), "--retries", "0"])
    new = {r["problem_id"]: r for r in map(json.loads, open(tmp_path / "out" / "results.jsonl", encoding="utf-8"))}
    old = committed(folder, graph)
    assert sorted(new) == sorted(problems)
    for problem, record in new.items():
        assert record["error"] is None, f"{graph} {problem} asked what its cache does not hold: {record['error']}"
        assert record["cached_calls"] == record["llm_calls"] == old[problem]["llm_calls"]
        assert (record["prompt_tokens"], record["completion_tokens"]) == \
            (old[problem]["prompt_tokens"], old[problem]["completion_tokens"])
        assert record["final_code"] == old[problem]["final_code"]
        assert record["private_passed"] == old[problem]["private_passed"]
