"""Each EvalPlus release's reference solutions scored by codeforest's HumanEval+/MBPP+ loader and scorer: a sound
loader passes every reference on its own base and plus tests. Usage: python check_references.py DATA_DIR"""

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from codeforest.datasets import DATASETS
from codeforest.evalplus import read_rows, reference_program
from codeforest.loading import load_dataset
from codeforest.scoring import score_plus, score_private


def check(data_dir: str, name: str, dataset: str) -> str:
    """How many references fail their own tests, and which."""
    rows = {r["task_id"]: r for r in read_rows(Path(data_dir) / DATASETS[name].files[0].local)}

    def score(task):
        code = reference_program(rows[task.id], dataset)
        return task.id, score_private(task, code), score_plus(task, code)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(score, load_dataset(name, data_dir)))
    failed = [(i, b.pass_rate, p.pass_rate) for i, b, p in results if not (b.passed and p.passed)]
    tests = sum(p.total for _, _, p in results)
    return (f"{name}: {len(results)} references, {tests:,} base + plus tests; failing their own tests: "
            f"{len(failed)} {failed}")


if __name__ == "__main__":
    for plus, original in (("humaneval_plus", "humaneval"), ("mbpp_plus", "mbpp")):
        print(check(sys.argv[1], plus, original), flush=True)
