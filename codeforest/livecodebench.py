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
from pathlib import Path

from codeforest.problems import DatasetError, Problem, Task
from codeforest.tools.testing import TestSuite

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


def to_task(row: dict, source: str) -> Task:
    """One row as a task: a LeetCode row as a ``Solution`` method problem, any other as stdin/stdout."""
    metadata = json.loads(row.get("metadata") or "{}")
    method = metadata.get("func_name")
    public, private = decode_tests(row["public_test_cases"]), decode_tests(row["private_test_cases"])
    problem_id = f"LCB/{row['question_id']}"
    if method:
        starter = STARTER_IMPORT + row["starter_code"].strip() + "\n"
        prompt = f"{row['question_content'].rstrip()}\n\n{STARTER_NOTE}\n```python\n{starter}```\n"
        shown = [call_test(method, c) for c in public]
        hidden = [call_test(method, c) for c in public + private]
        problem = Problem(id=problem_id, prompt=prompt, kind="function", entry_point=method, public_tests=shown)
        suite = TestSuite.function(hidden, method, timeouts=(TEST_TIMEOUT_S,) * len(hidden))
    else:
        prompt = f"{row['question_content'].rstrip()}\n\n{STDIN_NOTE}\n"
        pairs = [{"input": c["input"], "output": c["output"]} for c in public + private]
        problem = Problem(id=problem_id, prompt=prompt, kind="stdio", entry_point=None,
                          public_tests=[{"input": c["input"], "output": c["output"]} for c in public])
        suite = TestSuite.stdio(pairs, timeouts=(TEST_TIMEOUT_S,) * len(pairs))
    # lcb_runner scores a program on the public and the private tests together
    return Task(problem=problem, private_tests=suite, source=source, released=row["contest_date"][:10])


def load_livecodebench(paths: list[Path]) -> list[Task]:
    """Every row of the release's files, in order."""
    tasks = []
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for lineno, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    tasks.append(to_task(json.loads(line), f"LiveCodeBench {path.name}"))
                except (ValueError, KeyError, TypeError) as exc:
                    raise DatasetError(f"{path}:{lineno}: {type(exc).__name__}: {exc}") from None
    return tasks
