"""Every committed final program scored again on its private tests by today's sandbox: does each keep the verdict
its record holds? Usage: python rescore_committed.py [FOLDER ...] (default: every measurements/* folder with
results). Prints one line per folder and each program whose verdict differs; no model call."""

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from codeforest.bench import read_results
from codeforest.problems import load_dataset
from codeforest.scoring import score_private

HERE = Path(__file__).resolve().parent.parent


def folders(args: list[str]) -> list[Path]:
    """The folders named, else every measurement folder holding results."""
    return [Path(a) for a in args] or sorted(p.parent for p in HERE.glob("**/results.jsonl"))


def rescore(folder: Path) -> tuple[int, list[str]]:
    """How many distinct (problem, program) pairs were scored again, and those whose verdict changed."""
    programs: dict[tuple[str, str, str], bool] = {}
    for record in read_results(folder):
        if record.get("error") or "private_passed" not in record:
            continue
        programs.setdefault((record["dataset"], record["problem_id"], record.get("final_code") or ""),
                            bool(record["private_passed"]))
    tasks = {}
    for dataset in {key[0] for key in programs}:
        tasks.update({(dataset, t.id): t for t in load_dataset(dataset)})

    def verdict(item):
        (dataset, problem, code), held = item
        now = bool(score_private(tasks[dataset, problem], code).passed)
        return None if now == held else f"{problem}: recorded {held}, now {now}"

    with ThreadPoolExecutor(2) as pool:
        changed = [v for v in pool.map(verdict, programs.items()) if v]
    return len(programs), changed


if __name__ == "__main__":
    total = 0
    for folder in folders(sys.argv[1:]):
        count, changed = rescore(folder)
        total += count
        print(f"{folder.relative_to(HERE) if folder.is_relative_to(HERE) else folder}: {count} programs, "
              f"{len(changed)} verdicts differ", flush=True)
        for line in changed:
            print(f"  {line}", flush=True)
    print(f"in all: {total} programs")
