"""Which committed rows the code still reproduces: each row of a measurement folder run again from the folder's
response cache with no model behind it, so any call the cache does not hold fails (on a closed port of 127.0.0.1).

    python measurements/replay_check.py FOLDER [GRAPH ...]    e.g. apps-intro-1.5b codetree bester

Prints one line per row (graph and settings): its problems, how many came back with the same final program, and the
problems that asked something the cache does not hold; for the first such problem of a row, its first call the cache
does not hold, as a diff from the nearest cached prompt. Works in a scratch folder; the committed files are only read.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from codeforest.local_http import JsonHandler, LocalServer

HERE = Path(__file__).resolve().parent

# The bench in a child process with no embedded model: the model keeps its name (no file is looked for or
# downloaded), and its server's address is a closed port (or the capturing endpoint below), so a cache miss fails the
# call (the cache key leaves out a loopback port, so every committed answer is still found). As
# tests/test_committed_rows.py does it.
NO_MODEL = """
import os, sys
from pathlib import Path
from types import SimpleNamespace
from codeforest.tools import models
models.local_model_file = lambda model, progress=None: Path(models.embedded_spec(model).name + ".gguf")
url = os.environ.get("REPLAY_CHECK_URL", "http://127.0.0.1:9")
models.embedded_server = lambda *args, **kwargs: SimpleNamespace(base_url=url)
from codeforest.cli import main
sys.exit(main(sys.argv[1:]))
"""


def committed_rows(folder: Path, graphs: list[str]) -> dict[tuple[str, str, str], dict[str, dict]]:
    """The folder's rows on the embedded default model: (graph, dataset, settings JSON) -> problem -> last record."""
    rows: dict[tuple[str, str, str], dict[str, dict]] = {}
    for line in open(folder / "results.jsonl", encoding="utf-8"):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("model") != "local" or (graphs and record["graph"] not in graphs):
            continue
        key = (record["graph"], record["dataset"], json.dumps(record.get("settings") or {}, sort_keys=True))
        rows.setdefault(key, {})[record["problem_id"]] = record
    return rows


def replay(folder: Path, graph: str, dataset: str, settings: dict, problems: list[str], scratch: Path,
           model_url: str = "") -> list[dict]:
    """The row run again from a copy of the folder's cache (its model at ``model_url``, else a closed port); its new
    records."""
    cache = scratch / "responses.sqlite"
    shutil.copy(folder / "responses.sqlite", cache)
    env = {**os.environ, **{"CODEFOREST_" + name.upper(): value if isinstance(value, str) else json.dumps(value)
                            for name, value in settings.items()}}
    if model_url:
        env["REPLAY_CHECK_URL"] = model_url
    subprocess.run([sys.executable, "-c", NO_MODEL, "bench", "--graph", graph, "--dataset", dataset, "--problems",
                    ",".join(problems), "--model", "local", "--cache", str(cache), "--out", str(scratch),
                    "--concurrency", "2", "--retries", "0"], env=env, capture_output=True, text=True)
    results = scratch / "results.jsonl"
    return [json.loads(line) for line in open(results, encoding="utf-8")] if results.exists() else []


def messages_text(messages: list[tuple[str, str]]) -> list[str]:
    """A prompt's lines for a person: each message under its role."""
    return [line for role, content in messages for line in (f"[{role}]", *content.splitlines())]


def cached_prompts(cache: Path) -> list[list[tuple[str, str]]]:
    """Every prompt the cache holds, as (role, content) messages."""
    roles = {"human": "user", "ai": "assistant", "system": "system"}
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT DISTINCT prompt FROM responses").fetchall()
    prompts = []
    for (prompt,) in rows:
        try:
            messages = json.loads(prompt)
            prompts.append([(roles.get(m["kwargs"].get("type"), "?"), m["kwargs"]["content"]) for m in messages])
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return prompts


def first_miss(folder: Path, graph: str, dataset: str, settings: dict, problem: str) -> str:
    """One problem's first call the cache does not hold, as a diff from the cached prompt that starts with the most of
    it (the one with the same messages, when only the call's settings differ)."""
    asked: list[dict] = []

    class Capture(JsonHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            asked.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_json(400, {"error": {"message": "not in the cache"}})

    server = LocalServer()
    server.serve(Capture)
    with server, tempfile.TemporaryDirectory() as scratch:
        replay(folder, graph, dataset, settings, [problem], Path(scratch), server.url.removesuffix("/v1"))
    if not asked:
        return "  (no call reached the model)"
    wanted = [(m["role"], m.get("content") or "") for m in asked[0]["messages"]]
    text = "\n".join(messages_text(wanted))

    def likeness(cached: list[tuple[str, str]]) -> tuple[int, float]:  # the longest shared start, then alike overall
        other = "\n".join(messages_text(cached))
        return len(os.path.commonprefix([other, text])), difflib.SequenceMatcher(None, other, text).quick_ratio()

    nearest = max(cached_prompts(folder / "responses.sqlite"), default=[], key=likeness)
    diff = list(difflib.unified_diff(messages_text(nearest), messages_text(wanted), "cached", "asked", lineterm="",
                                     n=2))
    if not diff:
        return "  the same messages as a cached call: the call's settings differ (output limit, temperature or format)"
    return "\n".join("  " + line[:160] for line in diff[:40])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a folder of measurements/ with results.jsonl and responses.sqlite")
    parser.add_argument("graphs", nargs="*", help="only these graphs' rows")
    args = parser.parse_args()
    folder = HERE / args.folder
    for (graph, dataset, settings), committed in committed_rows(folder, args.graphs).items():
        with tempfile.TemporaryDirectory() as scratch:
            new = replay(folder, graph, dataset, json.loads(settings), list(committed), Path(scratch))
        missed = [r["problem_id"] for r in new if r.get("error") or r.get("cached_calls") != r.get("llm_calls")]
        same = sum(not r.get("error") and r["final_code"] == committed[r["problem_id"]]["final_code"] for r in new)
        print(f"{graph} {settings}: {len(new)}/{len(committed)} problems, same final program {same}, "
              f"asked what the cache does not hold: {', '.join(missed) or 'none'}", flush=True)
        if missed:
            print(f"  {missed[0]}, its first call not in the cache:", flush=True)
            print(first_miss(folder, graph, dataset, json.loads(settings), missed[0]), flush=True)


if __name__ == "__main__":
    main()
