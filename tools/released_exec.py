"""A failing test as the released executors report it, run in the sandbox: the HumanEval executor of CodePRM,
RethinkMCTS and RPM-MCTS, and CodeTree's two (``codetree_function_failures``, ``codetree_stdin_failures``).

That executor runs each assert after the program in one text (its 16 import lines, the program, two line breaks, the
assert) compiled as ``ENTRY.py``; an error is reported as the frames of that text from the first one in it (``File
"ENTRY.py", line 23, in <module>`` and the line) and the error; a wrong value as the value the call returns (as
``str`` writes it). The line numbers follow from that layout, so only running it gives the same text: each failing
test runs so in a child process inside the sandbox (the program's own run, which decides the verdict, is separate).
"""

from __future__ import annotations

import ast
import json
import os

from codeforest.suites import ExecutionResult, TestSuite
from codeforest.tools.sandbox import run

IMPORTS = ["import math", "import re", "import sys", "import copy", "import datetime", "import itertools",
           "import collections", "import heapq", "import statistics", "import functools", "import hashlib",
           "import numpy", "import numpy as np", "import string", "from typing import *", "from collections import *"]
CODEPRM_LABEL = "# Current Execution Output:\n"
RETHINK_LABEL = "# Current Execution Output: \n"
RPM_LABEL = "# Real Execution Output: \n"
# The released HumanEval executor of CodePRM and RethinkMCTS runs all the public tests in one child process it waits
# 10 s for; a run that does not finish by then reads as 21 failures ("the average number of tests"), each
# ``unfinished_output(label)``, and a pass rate of 0.
RELEASED_JOIN_S = 10.0
UNFINISHED_TESTS = 21


def unfinished_output(label: str) -> str:
    """The text of each failure the released executor reports for a run it gave up waiting for."""
    return f"Unknown test\n\n{label}The code executes failed! No result got!"


UNFINISHED_OUTPUT = unfinished_output(CODEPRM_LABEL)
# The released exec_code and eval_code, run in a child of the sandboxed program: stdin JSON {entry, program, test,
# limit}; the reply follows the marker on stdout.
HARNESS = r'''
import ast, contextlib, io, json, signal, sys, threading, traceback


class TimeOut(Exception):
    pass


def _alarm(signum, frame):
    raise TimeOut


def exec_code(entry, text, limit):
    signal.signal(signal.SIGALRM, _alarm)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                exec(compile(text, f"{entry}.py", "exec"), {"__builtins__": __builtins__})
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        return ""
    except TimeOut:
        return "TIMEOUT"
    except Exception:
        try:
            kind, value, frames = sys.exc_info()
            error = "".join(traceback.format_exception_only(kind, value)).strip()
            frames = traceback.extract_tb(frames)
            first = 0
            while first < len(frames) and frames[first][0] != f"{entry}.py":
                first += 1
            frames = frames[first:]
            if not frames:
                return error
            lines = text.split("\n")
            shown = [info.strip() + "\n" + lines[frame[1] - 1]
                     for info, frame in zip(traceback.format_list(frames), frames)]
            return "\n".join(shown).strip() + "\n" + error
        except Exception:
            return "Unknown Error"


def eval_code(entry, program, test, limit):
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            compiled = compile(program + "\n", f"{entry}.py", "exec")
            scope = {"__builtins__": __builtins__}
            node = ast.parse(test).body[0].test
            call = ast.unparse(getattr(node, "left", node)).strip()
            exec(compiled, scope)
            box = []
            worker = threading.Thread(target=lambda: box.append(eval(call, scope)), daemon=True)
            worker.start()
            worker.join(limit)
            return box[0] if box else ""
    except Exception:
        return ""


request = json.loads(sys.stdin.read())
entry, program, test, limit = request["entry"], request["program"], request["test"], request["limit"]
error = exec_code(entry, program + "\n" + test, limit)
output = error if error in ("", "TIMEOUT") else eval_code(entry, program, test, limit)
if output == "":
    output = error
reply = {"error": error, "output": str(output)}
sys.__stdout__.write("\n@@released@@" + json.dumps(reply))
'''
RUNNER = f'''
import json, subprocess, sys

HARNESS = {HARNESS!r}


def released_test(request):
    try:
        done = subprocess.run([sys.executable, "-c", HARNESS], input=request.encode(), capture_output=True,
                              timeout=2 * json.loads(request)["limit"] + 5)
    except subprocess.TimeoutExpired:
        return json.dumps({{"error": "TIMEOUT", "output": "TIMEOUT"}})
    return done.stdout.decode("utf-8", "replace").rpartition("@@released@@")[2]
'''


# The released CodeTree stdin executor (PyExecutorPro.execute), run in a child of the sandboxed program: it writes the
# program to its file and runs it there on each input, so an error's traceback names that file as Python prints it.
SCRIPT_RUNNER = r'''
import json, os, subprocess, sys


def released_script(request):
    request = json.loads(request)
    path = request["path"]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as program:
        program.write(request["program"])
    try:
        done = subprocess.run([sys.executable, path], input=request["input"], text=True, capture_output=True,
                              timeout=request["timeout"])
    except subprocess.TimeoutExpired:
        return json.dumps({"timed_out": True})
    except Exception as exc:
        return json.dumps({"raised": str(exc)})
    return json.dumps({"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr})
'''


# The import lines the released CodeTree function executor puts before the program.
CODETREE_IMPORTS = ("from typing import *\nfrom collections import *\nimport math\nimport sys\nimport random\n"
                    "import re\nimport itertools, functools, bisect, heapq, string\n")


def with_imports(code: str) -> str:
    """A program as the released executor runs it for its verdict: its 16 import lines, then the program."""
    return "\n".join(IMPORTS) + "\n" + code


def released_program(text: str) -> str:
    """The program the released executor runs: the first ```python block of the text, else the text."""
    return text.split("```python")[1].split("```")[0] if "```python" in text else text


def judged_as_released(text: str) -> str:
    """What the released HumanEval executor runs for a reply's verdict: its first python block after its imports."""
    return with_imports(released_program(text))


def released_failures(text: str, tests: list[str], entry: str, *, label: str, limit: float,
                      backend: str | None = None) -> list[dict]:
    """``{'error': ..., 'output': ...}`` for each (failing) assert in ``tests``, as the released executor reports
    it: ``output`` is the assert, a blank line, ``label`` and the value returned (or the error, or TIMEOUT)."""
    program = judged_as_released(text) + "\n"
    requests = [{"entry": entry, "program": program, "test": "\n" + test, "limit": limit} for test in tests]
    failures = []
    for test, reply in zip(tests, _replies(RUNNER, "released_test", requests, 2 * limit + 10, backend), strict=True):
        error = reply.get("error") if isinstance(reply, dict) and isinstance(reply.get("error"), str) else "TIMEOUT"
        shown = reply.get("output") if isinstance(reply, dict) and isinstance(reply.get("output"), str) else error
        failures.append({"error": error, "output": f"\n{test.strip()}\n\n{label}{shown}"})
    return failures


def released_failed_texts(text: str, result: ExecutionResult, entry: str, *, label: str, limit: float,
                          backend: str | None = None, cap: int | None = None) -> list[str]:
    """The failing tests of a function problem's run as the released HumanEval executor lists them: its
    ``UNFINISHED_TESTS`` placeholders for a run it would have stopped waiting for, else the first ``cap`` failing
    asserts run again in its harness (the program is the first python block of ``text``)."""
    if unfinished_in_join(result):
        return [unfinished_output(label)] * UNFINISHED_TESTS
    failing = [o.test for o in result.outcomes if not o.passed][:cap]
    if not failing:
        return []
    return [failure["output"] for failure in released_failures(text, failing, entry, label=label, limit=limit,
                                                               backend=backend)]


def unfinished_in_join(result) -> bool:
    """True when the released CodePRM executor would have given up on this run: a test ran out of its time (as long
    as the whole join), or all of them together took longer than the join."""
    return any(o.timed_out for o in result.outcomes) or result.wall_s > RELEASED_JOIN_S


def results_text(passed: list[bool], failures: list[dict]) -> str:
    """The released executor's results list as Python prints it (RPM-MCTS's evaluator reads it): ``[True, '']``
    for a passing test, ``[False, {'error': ..., 'output': ...}]`` for a failing one (``failures`` in order)."""
    left = iter(failures)
    return str([[True, ""] if ok else [False, next(left)] for ok in passed])


def codetree_stdin_failures(program: str, tests: list[tuple[str, str]], path: str, seconds: float,
                            backend: str | None = None) -> list[str | None]:
    """Each (input, expected output) test as the released CodeTree stdin executor lists a failure, run there as the
    file ``path`` (its folder's ``temp_files/temp_test<pid>.py``) with the interpreter it names ``python``: the
    wrong output, the program's own stderr when it exits with an error, or the subprocess time-out's text; None
    for a test it passes."""
    command = ["python", f"{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)}"]
    requests = [{"path": path, "program": program, "input": given, "timeout": seconds} for given, _ in tests]
    replies = _replies(SCRIPT_RUNNER, "released_script", requests, len(tests) * (seconds + 5) + 10, backend)
    failures = []
    for (given, expected), ran in zip(tests, replies, strict=True):
        if not isinstance(ran, dict) or not ran or ran.get("timed_out"):
            failures.append(f"{given.strip()}\nProgram's Output: Command '{command}' timed out after {seconds} seconds")
        elif "raised" in ran:
            failures.append(f"{given.strip()}\nProgram's Output: {ran['raised']}")
        elif ran["returncode"] != 0:
            failures.append(f"{given.strip()}\nProgram's Output: {ran['stderr']}")
        elif ran["stdout"].strip() == expected.strip():
            failures.append(None)
        else:
            failures.append(f"Input:\n{given.strip()}\nExpected Output:\n{expected.strip()}\n"
                            f"Program's Output:\n{ran['stdout'].strip()}\n{'-' * 29}")
    return failures


def codetree_function_failures(program: str, tests: list[str], path: str, seconds: float,
                               backend: str | None = None) -> list[str | None]:
    """Each assert as the released CodeTree function executor judges and shows it, run in the sandbox: the program
    and the assert as the file ``path`` (``temp_files/temp_test<pid>.py``), passed when it exits cleanly; a failure
    runs ``print(CALL)`` after the program as ``temp_test_output<pid>.py`` beside it (``CALL`` the assert's left
    side as ``astunparse`` writes it) and shows its stderr then its stdout, or the time-out text; None for a pass."""
    try:
        import astunparse
    except ImportError as exc:
        raise RuntimeError("the released CodeTree executor's rendering of a failing call needs astunparse: "
                           "pip install 'codeforest[released]'") from exc
    runs = [{"path": path, "program": f"{CODETREE_IMPORTS}\n{program}\n{test}\n", "input": "", "timeout": seconds}
            for test in tests]
    verdicts = _replies(SCRIPT_RUNNER, "released_script", runs, len(tests) * (seconds + 5) + 10, backend)
    output_path = os.path.join(os.path.dirname(path), os.path.basename(path).replace("temp_test", "temp_test_output"))
    shown: dict[int, str] = {}
    printing: list[tuple[int, dict]] = []
    for k, (test, ran) in enumerate(zip(tests, verdicts, strict=True)):
        unfinished = _unfinished_script(ran, seconds)
        if unfinished is not None:
            shown[k] = unfinished
        elif ran["returncode"] != 0:
            try:
                call = _released_call(test, astunparse.unparse)
            except Exception as exc:  # the released executor shows what went wrong, as it does any error
                shown[k] = str(exc)
                continue
            printing.append((k, {"path": output_path, "program": f"{CODETREE_IMPORTS}\n{program}\nprint({call})",
                                 "input": "", "timeout": seconds}))
    outputs = _replies(SCRIPT_RUNNER, "released_script", [r for _, r in printing],
                       len(printing) * (seconds + 5) + 10, backend) if printing else []
    for (k, _), ran in zip(printing, outputs, strict=True):
        unfinished = _unfinished_script(ran, seconds)
        shown[k] = unfinished if unfinished is not None else ran["stderr"] + ran["stdout"]
    return [f"{test} # incorrect program's output: {shown[k]}" if k in shown else None
            for k, test in enumerate(tests)]


def _unfinished_script(ran, seconds: float) -> str | None:
    """What the released function executor shows for a script run that did not exit: its time-out text, or the
    error starting it raised; None for a run that exited."""
    if not isinstance(ran, dict) or not ran or ran.get("timed_out"):
        return f"Program Timed Out after {seconds} seconds."
    return ran.get("raised")


def _released_call(test: str, unparse) -> str:
    """The call of an assert as the released CodeTree executor writes it (``get_call_str``): the compared left side,
    else the whole test, as ``unparse`` (astunparse's, parentheses around every operation) renders it."""
    parsed = ast.parse(test)
    try:
        call = parsed.body[0].test.left
    except Exception:
        call = parsed.body[0].test
    return unparse(call).strip()


def _replies(runner: str, function: str, requests: list[dict], timeout: float, backend: str | None) -> list:
    """Each request's reply from ``function`` of ``runner``, run in the sandbox as a calls suite: its JSON value,
    ``{}`` for a call with no readable reply (the run ended or timed out first)."""
    result = run(runner, TestSuite("calls", tuple(json.dumps([json.dumps(r)]) for r in requests), function),
                 timeout=timeout, backend=backend)
    replies = []
    for outcome in [*result.outcomes, *[None] * (len(requests) - len(result.outcomes))]:
        try:
            replies.append(json.loads(json.loads(outcome.actual)) if outcome is not None and outcome.actual else {})
        except (json.JSONDecodeError, TypeError):
            replies.append({})
    return replies
