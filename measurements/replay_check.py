"""Which committed rows the code still reproduces: each row of a measurement folder run again from the folder's
response cache with no model behind it, so any call the cache does not hold fails (on a closed port of 127.0.0.1).

    python measurements/replay_check.py FOLDER [GRAPH ...]    e.g. apps-intro-1.5b codetree bester

Prints one line per row (graph and settings): its problems, how many came back with the same final program, and the
problems that asked something the cache does not hold. Works in a scratch folder; the committed files are only read.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The bench in a child process whose embedded model server never starts: its address is a closed port, so a cache
# miss is a connection error (the cache key leaves out a loopback port, so every committed answer is still found).
NO_MODEL = """
import sys
from codeforest.tools import models
def start(self, wait_s=0):
    self.base_url = "http://127.0.0.1:9"
    return self
models.EmbeddedServer.start = start
models.EmbeddedServer.stop = lambda self: None
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


def replay(folder: Path, graph: str, dataset: str, settings: dict, problems: list[str], scratch: Path) -> list[dict]:
    """The row run again from a copy of the folder's cache; its new records."""
    cache = scratch / "responses.sqlite"
    shutil.copy(folder / "responses.sqlite", cache)
    env = {**os.environ, **{"CODEFOREST_" + name.upper(): value if isinstance(value, str) else json.dumps(value)
                            for name, value in settings.items()}}
    subprocess.run([sys.executable, "-c", NO_MODEL, "bench", "--graph", graph, "--dataset", dataset, "--problems",
                    ",".join(problems), "--model", "local", "--cache", str(cache), "--out", str(scratch),
                    "--concurrency", "2"], env=env, capture_output=True, text=True)
    results = scratch / "results.jsonl"
    return [json.loads(line) for line in open(results, encoding="utf-8")] if results.exists() else []


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


if __name__ == "__main__":
    main()
