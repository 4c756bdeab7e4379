"""Every committed final program scored again on its private tests by today's sandbox: does each keep the verdict
and the private pass rate its record holds, and (where the folder has a plus.jsonl) its EvalPlus verdicts? Usage:
python rescore_committed.py [FOLDER ...] (default: every measurements/* folder with results). Prints one line per
folder and each program whose verdict or pass rate differs; no model call."""

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from codeforest.bench import read_results
from codeforest.loading import load_dataset
from codeforest.scoring import score_private

HERE = Path(__file__).resolve().parent.parent
OLD_FORMAT = "old-format pass rate"


def folders(args: list[str]) -> list[Path]:
    """The folders named, else every measurement folder holding results."""
    return [Path(a) for a in args] or sorted(p.parent for p in HERE.glob("**/results.jsonl"))


def rescore(folder: Path) -> tuple[int, list[str]]:
    """How many distinct (problem, program) pairs were scored again, and those whose verdict changed."""
    programs: dict[tuple[str, str, str], tuple[bool, float | None]] = {}
    for record in read_results(folder):
        if record.get("error") or "private_passed" not in record:
            continue
        programs.setdefault((record["dataset"], record["problem_id"], record.get("final_code") or ""),
                            (bool(record["private_passed"]), record.get("private_pass_rate")))
    tasks = {}
    for dataset in {key[0] for key in programs}:
        tasks.update({(dataset, t.id): t for t in load_dataset(dataset)})

    def verdict(item):
        (dataset, problem, code), (held, rate) = item
        score = score_private(tasks[dataset, problem], code)
        if bool(score.passed) != held:
            return f"{problem}: recorded {held}, now {bool(score.passed)}"
        if rate is None or score.pass_rate is None or abs(score.pass_rate - rate) <= 1e-9:
            return None
        if rate == float(held):
            return OLD_FORMAT  # written before 2026-11-25: the check counted as one test (CHANGELOG.md)
        return f"{problem}: same verdict, pass rate recorded {rate:.3f}, now {score.pass_rate:.3f}"

    with ThreadPoolExecutor(2) as pool:
        found = [v for v in pool.map(verdict, programs.items()) if v]
    old = found.count(OLD_FORMAT)
    changed = [v for v in found if v != OLD_FORMAT]
    if old:
        changed.append(f"({old} records of before 2026-11-25 hold the check's pass as their pass rate: not compared)")
    return len(programs), changed


def rescore_plus_verdicts(folder: Path) -> tuple[int, list[str]]:
    """The folder's plus.jsonl rows scored again on EvalPlus's tests: how many, and those that differ."""
    from codeforest.evalplus import rescore_plus

    kept = {(r["problem_id"], r["code_sha256"]): r for r in map(json.loads, (folder / "plus.jsonl").open())}
    changed = []
    for row in rescore_plus(read_results(folder)):
        old = kept.get((row["problem_id"], row["code_sha256"]))
        fields = ("base_passed", "plus_passed", "plus_pass_rate", "plus_tests")
        if old is None or any(old[f] != row[f] for f in fields):
            changed.append(f"{row['problem_id']} ({row['code_sha256'][:8]}): recorded "
                           f"{old and {f: old[f] for f in fields}}, now {({f: row[f] for f in fields})}")
    return len(kept), changed


if __name__ == "__main__":
    total = 0
    for folder in folders(sys.argv[1:]):
        if (folder / "plus.jsonl").is_file():
            count, changed = rescore_plus_verdicts(folder)
            print(f"{folder.relative_to(HERE)}/plus.jsonl: {count} programs on HumanEval+/MBPP+, "
                  f"{len(changed)} rows differ", flush=True)
            for line in changed:
                print(f"  {line}", flush=True)
        count, changed = rescore(folder)
        total += count
        differ = [line for line in changed if not line.startswith("(")]
        print(f"{folder.relative_to(HERE) if folder.is_relative_to(HERE) else folder}: {count} programs, "
              f"{len(differ)} differ", flush=True)
        for line in changed:
            print(f"  {line}", flush=True)
    print(f"in all: {total} programs")
