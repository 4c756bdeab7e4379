"""How much room the selectors had: for each selector run of a results folder, score every program the selector
chose among (the distinct public-passing programs of the run's tree, or all of them when none passes) on the
private tests, here in the harness, after the run; nothing reaches a graph.

    python measurements/selector-oracle/oracle.py measurements/apps-intro-1.5b apps_introductory150

writes ``oracle-<folder>.jsonl`` (one line per run and problem) and prints a table: per run, the finals that pass
the public tests but fail the private ones, and among those, the problems where a right program was among the
candidates (what a perfect selector would have fixed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from codeforest.bench import latest_records, read_results, run_label, tree_path
from codeforest.graphs.selection import choosable, distinct_programs
from codeforest.loading import load_dataset
from codeforest.report import public_but_wrong
from codeforest.scoring import score_private


def main(folder: str, dataset: str) -> None:
    out = Path(folder)
    tasks = {t.id: t for t in load_dataset(dataset)}
    path = Path(__file__).with_name(f"oracle-{out.name}.jsonl")
    done = {(r["label"], r["problem_id"]): r for r in map(json.loads, path.open())} if path.exists() else {}
    with path.open("a") as sink:
        for record in latest_records(read_results(out)):
            label = run_label(record)
            if "selection" not in record or (label, record["problem_id"]) in done:
                continue
            tree = json.loads(tree_path(out, record).read_text())
            among = choosable(distinct_programs({"nodes": tree}))
            right = [n["id"] for n in among if score_private(tasks[record["problem_id"]], n["code"]).passed]
            row = {"label": label, "problem_id": record["problem_id"], "candidates": len(among),
                   "public_but_wrong": public_but_wrong(record), "right": right,
                   "final_right": bool(record["private_passed"]), "chosen": record["selection"].get("chosen_node"),
                   "groups": [g["nodes"] for g in record["selection"].get("groups", [])]}
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            done[(label, record["problem_id"])] = row
    print("| run | problems | right finals | a right candidate among those chosen from (the ceiling) | public-passing "
          "but wrong | of those, a right candidate was there | right candidate, wrong final (any) |")
    print("|---|---|---|---|---|---|---|")
    for label in sorted({k[0] for k in done}):
        rows = sorted((r for (lab, _), r in done.items() if lab == label), key=lambda r: r["problem_id"])
        wrong = [r for r in rows if r["public_but_wrong"]]
        room = [r for r in wrong if r["right"]]
        missed = [r for r in rows if r["right"] and not r["final_right"]]
        names = lambda rs: f"{len(rs)} ({', '.join(r['problem_id'] for r in rs)})" if rs else "0"  # noqa: E731
        right = sum(r["final_right"] for r in rows)
        ceiling = sum(bool(r["right"]) for r in rows)
        print(f"| {label} | {len(rows)} | {right} | {ceiling} | {names(wrong)} | {names(room)} | {names(missed)} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
