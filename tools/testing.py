"""The feedback a model reads about a program's test results, and how outputs are compared (the suites and
results themselves are plain data in ``codeforest.suites``)."""

from __future__ import annotations

import ast
import json
import math

from codeforest.suites import ExecutionResult, TestOutcome, TestSuite
from codeforest.tools._runner import to_plain

FEEDBACK_LIMIT = 2500  # characters; CodeTree's released code cuts feedback here


def calls_suite(inputs: list[list], entry_point: str) -> TestSuite:
    """Calls ``entry_point(*args)`` for each argument list, to get the values returned (``TestOutcome.actual``: the
    value as plain-data JSON, ``seconds``: the call's time)."""
    return TestSuite("calls", tuple(json.dumps(to_plain(list(args))) for args in inputs), entry_point)


def feedback_text(result: ExecutionResult, limit: int = FEEDBACK_LIMIT) -> str:
    """Render the failing/passing tests as the feedback text the papers put into prompts."""
    if result.error and not result.outcomes:
        return _cut(result.error, limit)
    passed = [o for o in result.outcomes if o.passed]
    failed = [o for o in result.outcomes if not o.passed]
    lines = ["Tests passed:"]
    lines += [_show_test(o) for o in passed] or ["(none)"]
    lines += ["", "Tests failed:"]
    lines += [_show_failure(o) for o in failed] or ["(none)"]
    if result.error:
        lines += ["", result.error]
    return _cut("\n".join(lines), limit)


def codetree_feedback(result: ExecutionResult, timeout: float, released: list[str | None] | None = None) -> str:
    """The released CodeTree executors' feedback, character for character where it can be: ``Tested passed:`` /
    ``Tests failed:`` with each failing assert's printed value (function problems), ``Tests succeeded:`` /
    ``Tests failed:`` with inputs and outputs (stdin problems), cut at 2500 characters. A syntax error is the text
    ``True``, as released (the executor returns ``str(bool)``). A failure's text is codeforest's (the value printed,
    the traceback excerpt) unless ``released`` gives each failing test's text as the released executor writes it
    (its traceback names its temporary file: ``released_exec.codetree_stdin_failures`` and
    ``codetree_function_failures``)."""
    whole = bool(result.error and "syntax" in result.error.lower())
    if all([o.reason == "syntax" for o in result.outcomes] or [whole]):
        return "True"
    seconds = codetree_seconds(timeout)
    if result.outcomes and all(is_stdin_test(o) for o in result.outcomes):
        return _codetree_stdio(result, seconds, released)[:FEEDBACK_LIMIT]
    text = ""
    passed = [o.test.strip() for o in result.outcomes if o.passed]
    failed = list(released) if released is not None else [
        f"{o.test.strip()} # incorrect program's output: {_printed_output(o, seconds)}"
        for o in result.outcomes if not o.passed]
    if passed:
        text += "Tested passed:" + "".join(f"\n{t}" for t in passed)
    if failed:
        text += "\nTests failed:" + "".join(f"\n{t}" for t in failed)
    if result.error and not result.outcomes:
        text = result.error
    return text[:FEEDBACK_LIMIT]


def _printed_output(o: TestOutcome, seconds: float) -> str:
    """What the released executor shows for a failing assert: the value ``print`` writes, or the error."""
    if o.timed_out:
        return f"Program Timed Out after {seconds} seconds."
    if o.reason == "wrong answer" and o.actual is not None:
        return f"{_as_printed(o.actual)}\n"
    return f"{o.traceback or o.error or ''}\n"


def _as_printed(shown: str) -> str:
    """A value shown by its repr, as ``print`` writes it (a string without its quotes)."""
    try:
        value = ast.literal_eval(shown)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return shown
    return str(value)


def codetree_seconds(timeout: float) -> float:
    """A test's time limit as the released CodeTree writes it (``1``, not ``1.0``)."""
    return int(timeout) if float(timeout).is_integer() else timeout


def _codetree_stdio(result: ExecutionResult, seconds: float, released: list[str | None] | None) -> str:
    passed = [f"Input:\n{o.test.strip()}\nOutput:\n{(o.expected or '').strip()}" for o in result.outcomes if o.passed]
    failed = []
    shown = iter(released or [])
    for o in (o for o in result.outcomes if not o.passed):
        text = next(shown, None)
        if text is not None:
            failed.append(text)
        elif o.timed_out:
            failed.append(f"{o.test.strip()}\nProgram's Output: Command 'python' timed out after {seconds} seconds")
        elif o.reason == "wrong answer":
            failed.append(f"Input:\n{o.test.strip()}\nExpected Output:\n{(o.expected or '').strip()}\n"
                          f"Program's Output:\n{(o.actual or '').strip()}\n{'-' * 29}")
        else:
            failed.append(f"{o.test.strip()}\nProgram's Output: {o.traceback or o.error or ''}\n")
    return "Tests succeeded:" + "".join(f"\n{t}" for t in passed or ["None"]) + \
        "\nTests failed:" + "".join(f"\n{t}" for t in failed or ["None"])


def failures_text(result: ExecutionResult, limit: int = FEEDBACK_LIMIT) -> str:
    """Only the failing tests (and a whole-program error): BESTER's ``{errors}``."""
    if result.error and not result.outcomes:
        return _cut(result.error, limit)
    lines = [_show_failure(o) for o in result.outcomes if not o.passed]
    if result.error:
        lines.append(result.error)
    return _cut("\n".join(lines), limit)


def _show_test(o: TestOutcome) -> str:
    if "\n" in o.test.strip() and o.expected is not None:
        return f"Input: {o.test.strip()!r}  Output: {o.expected.strip()!r}"
    return o.test.strip()


def is_stdin_test(o: TestOutcome) -> bool:
    """A stdin/stdout test (its input and expected output), not an assert."""
    return o.expected is not None and not o.test.lstrip().startswith("assert")


def current_output(o: TestOutcome, timed_out: str) -> str:
    """What a failing test saw: the wrong output, else the error (or the output), or ``timed_out``."""
    if o.timed_out:
        return timed_out
    if o.reason == "wrong answer" and o.actual is not None:
        return o.actual
    return o.error or (o.actual if o.actual is not None else "no output")


def _show_failure(o: TestOutcome) -> str:
    got = current_output(o, "Program timed out")
    if is_stdin_test(o):
        return f"Input: {o.test!r}\nExpected output: {o.expected!r}\nProgram output: {got!r}"
    test = o.test.strip()
    if "\n" in test:  # a whole check() block: show only its last lines
        test = "\n".join(test.splitlines()[-3:])
    return f"{test} # program output: {got}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20] + "\n... (truncated)"


def printed(text: str) -> str:
    """Printed output as shown: no trailing spaces on a line, no blank lines around it."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def outputs_match(actual: str, expected: str) -> bool:
    """Compare program output to expected stdout: whitespace-insensitive, floats within 1e-6."""
    if printed(actual) == printed(expected):
        return True
    a_tokens, e_tokens = actual.split(), expected.split()
    if len(a_tokens) != len(e_tokens):
        return False
    return all(_token_equal(a, e) for a, e in zip(a_tokens, e_tokens, strict=True))


def _token_equal(a: str, e: str) -> bool:
    if a == e:
        return True
    try:
        return math.isclose(float(a), float(e), rel_tol=1e-6, abs_tol=1e-6)
    except ValueError:
        return False


PRM_PASSED = "All public test cases passed!"
PRM_MAX_FAILED = 5  # CodePRM's released code shows at most 5 failing tests
PRM_TEST_CHARS = 2048  # about the released code's 512 tokens per failing test


def prm_feedback(result: ExecutionResult, failures: list[str] | None = None) -> str:
    """The public-test feedback CodePRM's verifier and refine prompts see (its released code's format).

    "All public test cases passed!", or up to 5 failing tests as "## Failed test i:" with the input,
    the ground truth and the current output (an assert test shows itself instead of input and truth);
    tests whose text is over the size limit are left out unless all are, then they are cut. ``failures``: the
    failing tests' texts as given (the released executor's, ``tools.released_exec``), in order.
    """
    if result.all_passed:
        return PRM_PASSED
    if not result.total:
        return "No public test cases."
    shown = failures if failures is not None else [_prm_failure(o) for o in result.outcomes if not o.passed]
    if not shown and result.error:
        shown = [f"# Input:\nUnknown\n# Ground Truth Output:\nUnknown\n\n# Current Execution Output:\n{result.error}"]
    kept = [s for s in shown if len(s) < PRM_TEST_CHARS][:PRM_MAX_FAILED]
    if not kept:
        kept = [_cut(s, PRM_TEST_CHARS) for s in shown[:PRM_MAX_FAILED]]
    return "".join(f"\n\n## Failed test {k}: \n{text}" for k, text in enumerate(kept, 1)).strip()


def shown_test(o: TestOutcome) -> str:
    """A test as the feedback prompts show it: an assert as it is; a stdin test as its input and the expected
    output (the released APPS executors' "# Input / # Ground Truth Output")."""
    if is_stdin_test(o):
        return f"# Input:\n{o.test}\n# Ground Truth Output:\n{o.expected}"
    return o.test.strip()


def execution_report(o: TestOutcome, got: str, *, label: str = "# Current Execution Output:\n",
                     assert_lead: str = "") -> str:
    """A failing test as the released executors report it: the test as shown, a blank line, ``label`` and what
    it printed or returned (``assert_lead`` goes before an assert: the released RethinkMCTS starts it on a new line)."""
    return f"{'' if is_stdin_test(o) else assert_lead}{shown_test(o)}\n\n{label}{got}"


def _prm_failure(o: TestOutcome) -> str:
    """A failing test as the released CodePRM executors report it: on a new line, a returned value as ``print``
    writes it."""
    got = _as_printed(o.actual) if o.reason == "wrong answer" and o.actual is not None else current_output(o, "TIMEOUT")
    return "\n" + execution_report(o, got)
