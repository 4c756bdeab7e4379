"""Problems and tasks, as plain data.

A ``Problem`` is what a graph sees: the prompt and the public tests, nothing else. A ``Task`` is
what the harness holds: the problem plus its private tests, which never enter a graph. The benchmark
loaders that make them are in ``codeforest.loading``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

from typing_extensions import TypedDict

from codeforest.suites import KINDS, TestSuite


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


_EXAMPLE = re.compile(r">>>\s*(?P<call>.+?)\n\s*(?P<result>[^\n>][^\n]*)")


def docstring_tests(prompt: str, entry_point: str) -> list[str]:
    """Turn ``>>> f(x)`` / ``y`` docstring examples that call the entry point into asserts."""
    tests = []
    for m in _EXAMPLE.finditer(prompt):
        call, result = m["call"].strip(), m["result"].strip()
        if entry_point in call and result:
            tests.append(f"assert {call} == {result}")
    return tests
