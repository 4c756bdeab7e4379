"""Move benchmark rows from one results folder to another, with their trees and samples files, and write both
folders' reports again. It keeps a superseded row as measured beside the row that replaces it (an old row into a
subfolder), and merges a `rerun/` folder's rows into the folder it was run for.

    python measurements/move_rows.py SOURCE DESTINATION [LABEL ...]

LABEL is a row's run label as reports print it ("rpm_mcts", "rpm_mcts rpm_kb=false",
"resample resample_n=1000 token_budget=59254"); without labels every row moves. A row already in DESTINATION
is refused: the two would read as one."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from codeforest.bench import RESULTS, run_label, tree_path, write_samples  # noqa: E402
from codeforest.jsonl import append_records, read_records, rewrite_records  # noqa: E402
from codeforest.report import report  # noqa: E402


def raw_records(folder: Path) -> list[dict]:
    """A folder's result lines as written (a line that cannot be read stops the move: mend it first)."""
    path = folder / RESULTS
    if not path.is_file():
        return []
    records, unreadable = read_records(path)
    if unreadable:
        sys.exit(f"{path}: {unreadable} line(s) are not records: mend or remove them first")
    return records


def move_rows(source: Path, destination: Path, labels: set[str]) -> int:
    """Move the rows named by ``labels`` (all rows when empty) and their tree files; how many records moved."""
    records = raw_records(source)
    moves = [not labels or run_label(r) in labels for r in records]
    moving = [r for r, moves_it in zip(records, moves, strict=True) if moves_it]
    missing = labels - {run_label(r) for r in moving}
    if missing:
        sys.exit(f"no row {', '.join(sorted(missing))} in {source / RESULTS}; its rows: "
                 f"{', '.join(sorted({run_label(r) for r in records}))}")
    clashing = {run_label(r) for r in raw_records(destination)} & {run_label(r) for r in moving}
    if clashing:
        sys.exit(f"{destination} already has the row(s) {', '.join(sorted(clashing))}: move them away first")
    for record in moving:
        tree = tree_path(source, record)
        if tree.is_file():
            target = tree_path(destination, record)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(tree, target)
    append_records(destination / RESULTS, moving)
    rewrite_records(source / RESULTS, [r for r, moves_it in zip(records, moves, strict=True) if not moves_it])
    return len(moving)


def refresh(folder: Path) -> None:
    """The folder's samples files and report written again from the rows it now holds."""
    for stale in folder.glob("samples-*.jsonl"):
        stale.unlink()
    if raw_records(folder):
        write_samples(folder)
        report(folder)
    else:
        for emptied in (folder / RESULTS, folder / "report.md", *folder.glob("*.png")):
            emptied.unlink(missing_ok=True)
    trees = folder / "trees"
    for empty in sorted([p for p in trees.rglob("*") if p.is_dir()] + [trees] * trees.is_dir(), reverse=True):
        if not any(empty.iterdir()):
            empty.rmdir()
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("destination", type=Path)
    parser.add_argument("labels", nargs="*", help="run labels as reports print them (all rows when none)")
    args = parser.parse_args()
    moved = move_rows(args.source, args.destination, set(args.labels))
    for folder in (args.source, args.destination):
        refresh(folder)
    print(f"moved {moved} records from {args.source} to {args.destination}")


if __name__ == "__main__":
    main()
