"""LiveCodeBench (``livecodebench/code_generation_lite``) as codeforest tasks.

LeetCode problems are function problems: a ``Solution`` class whose method the tests call
(``assert Solution().maxSum([1, 2], 3) == 5``), each input line one JSON argument; AtCoder and Codeforces problems
are stdin/stdout. Public tests come from ``public_test_cases``, private ones from ``private_test_cases``, which
upstream stores as JSON or as base64 of zlib-compressed pickle of that JSON text. Pickle from the internet is code,
so it is read with an unpickler that refuses every global: only a plain string comes out, and anything else is
refused before it runs. Each private test gets LiveCodeBench's own 6 s limit (``lcb_runner``'s ``timeout``).
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import zlib
from functools import cached_property
from pathlib import Path

from codeforest.problems import DatasetError, Problem, Task
from codeforest.suites import TestSuite

TEST_TIMEOUT_S = 6.0  # lcb_runner's default timeout per test
STARTER_NOTE = "You will use the following starter code to write the solution to the problem."  # LiveCodeBench's
STDIN_NOTE = ("Read the inputs from stdin, solve the problem and write the answer to stdout (do not directly test "
              "on the sample inputs).")  # LiveCodeBench's own wording
# lcb_runner runs a program after ``from typing import *`` and more; the starter code shows the import the
# LeetCode signatures need (``List[int]``), since a program here runs as written
STARTER_IMPORT = "from typing import *\n\n"


class PickleRefused(DatasetError):
    """A pickled payload that is anything but a plain string."""


class _StringsOnly(pickle.Unpickler):
    """An unpickler that refuses every global and persistent id: no class, function or object can be built."""

    def find_class(self, module: str, name: str):
        raise PickleRefused(f"the pickled test cases name {module}.{name}: refused (only a plain string is read)")

    def persistent_load(self, pid):
        raise PickleRefused("the pickled test cases hold a persistent id: refused")


def unpickle_string(data: bytes) -> str:
    """The plain string a pickle holds; anything else is refused without being built."""
    try:
        value = _StringsOnly(io.BytesIO(data)).load()
    except PickleRefused:
        raise
    except Exception as exc:  # noqa: BLE001 - malformed bytes of any kind
        raise PickleRefused(f"the pickled test cases cannot be read ({type(exc).__name__})") from None
    if type(value) is not str:
        raise PickleRefused(f"the pickled test cases hold a {type(value).__name__}, not a string: refused")
    return value


def decode_tests(field: str) -> list[dict]:
    """Test cases as upstream stores them: JSON text, or base64(zlib(pickle(JSON text)))."""
    try:
        cases = json.loads(field)
    except ValueError:
        try:
            packed = zlib.decompress(base64.b64decode(field.encode("utf-8"), validate=True))
        except (ValueError, zlib.error) as exc:
            raise DatasetError(f"test cases neither JSON nor base64 zlib ({exc})") from None
        cases = json.loads(unpickle_string(packed))
    if not isinstance(cases, list) or not all(isinstance(c, dict) and {"input", "output"} <= set(c) for c in cases):
        raise DatasetError("test cases are not a list of {input, output} objects")
    return cases


def call_test(method: str, case: dict) -> str:
    """A functional test as an assert on ``Solution().method``: one JSON argument per input line."""
    args = [json.loads(line) for line in case["input"].split("\n") if line.strip()]
    call = f"Solution().{method}({', '.join(map(repr, args))})"
    return f"assert {call} == {json.loads(case['output'])!r}"


def to_problem(row: dict) -> Problem:
    """The part of a row a graph sees: a LeetCode row as a ``Solution`` method problem, any other as stdin/stdout,
    with its public tests."""
    method = json.loads(row.get("metadata") or "{}").get("func_name")
    public = decode_tests(row["public_test_cases"])
    problem_id = f"LCB/{row['question_id']}"
    if method:
        starter = STARTER_IMPORT + row["starter_code"].strip() + "\n"
        prompt = f"{row['question_content'].rstrip()}\n\n{STARTER_NOTE}\n```python\n{starter}```\n"
        return Problem(id=problem_id, prompt=prompt, kind="function", entry_point=method,
                       public_tests=[call_test(method, c) for c in public])
    return Problem(id=problem_id, prompt=f"{row['question_content'].rstrip()}\n\n{STDIN_NOTE}\n", kind="stdio",
                   entry_point=None, public_tests=[{"input": c["input"], "output": c["output"]} for c in public])


def scoring_suite(row: dict) -> TestSuite:
    """The tests a program is scored on: the public and the private ones together, as lcb_runner runs them, each
    under its 6 s."""
    method = json.loads(row.get("metadata") or "{}").get("func_name")
    cases = decode_tests(row["public_test_cases"]) + decode_tests(row["private_test_cases"])
    limits = (TEST_TIMEOUT_S,) * len(cases)
    if method:
        return TestSuite.function([call_test(method, c) for c in cases], method, timeouts=limits)
    return TestSuite.stdio([{"input": c["input"], "output": c["output"]} for c in cases], timeouts=limits)


class LazySuite:
    """A row's scoring suite, read from its line of the dataset file when first used: LiveCodeBench's private
    tests decompress to gigabytes, and a run scores only the problems it draws."""

    def __init__(self, path: Path, offset: int):
        self._path, self._offset = path, offset

    @cached_property
    def _suite(self) -> TestSuite:
        with open(self._path, "rb") as f:
            f.seek(self._offset)
            return scoring_suite(json.loads(f.readline()))

    def __getattr__(self, name: str):  # kind, tests, entry_point, timeouts, support
        return getattr(self._suite, name)

    def __len__(self) -> int:
        return len(self._suite)


def load_livecodebench(paths: list[Path]) -> list[Task]:
    """Every row of the release's files, in order; each private suite is read when first used."""
    tasks = []
    for path in paths:
        with open(path, "rb") as lines:
            offset = 0
            for lineno, line in enumerate(lines, 1):
                start, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    if not isinstance(row["private_test_cases"], str):
                        raise TypeError("private_test_cases is not text")
                    tasks.append(Task(problem=to_problem(row), private_tests=LazySuite(path, start),
                                      source=f"LiveCodeBench {path.name}", released=row["contest_date"][:10]))
                except (ValueError, KeyError, TypeError) as exc:
                    raise DatasetError(f"{path}:{lineno}: {type(exc).__name__}: {exc}") from None
    return tasks
