"""Test suites and execution results: the data that crosses the sandbox boundary.

A function-style test is a snippet of Python run after the program in the same namespace
(an ``assert`` line, or a whole ``check(candidate)`` block); it passes when it raises nothing.
A stdin/stdout test is an input string and the expected output.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Literal, get_args

from codeforest.tools._runner import to_plain

Kind = Literal["function", "stdio"]
KINDS: tuple[str, ...] = get_args(Kind)

FEEDBACK_LIMIT = 2500  # characters; CodeTree's released code cuts feedback here


@dataclass(frozen=True)
class TestSuite:
    """Tests of one kind for one program: assert snippets (with an entry point), stdin/stdout pairs, or calls of
    the entry point whose returned values are wanted (``calls``: each test the JSON of its plain-data arguments).

    ``timeouts`` gives each test its own limit in seconds (else the run's); ``support`` is trusted code run in the
    program's namespace after it and before the tests (helpers the tests call), never part of the program.
    """

    __test__ = False  # not a pytest class

    kind: Literal["function", "stdio", "calls"]
    tests: tuple = ()
    entry_point: str | None = None
    timeouts: tuple[float, ...] = ()
    support: str = ""

    @classmethod
    def function(cls, tests: list[str], entry_point: str | None = None, *, timeouts: tuple[float, ...] = (),
                 support: str = "") -> TestSuite:
        """A suite of function-style test snippets."""
        return cls("function", tuple(tests), entry_point, tuple(timeouts), support)

    @classmethod
    def calls(cls, inputs: list[list], entry_point: str) -> TestSuite:
        """Calls ``entry_point(*args)`` for each argument list, to get the values returned (``TestOutcome.actual``:
        the value as plain-data JSON, ``seconds``: the call's time)."""
        return cls("calls", tuple(json.dumps(to_plain(list(args))) for args in inputs), entry_point)

    @classmethod
    def stdio(cls, pairs: list[dict], *, timeouts: tuple[float, ...] = ()) -> TestSuite:
        """A suite of ``{"input": ..., "output": ...}`` pairs."""
        return cls("stdio", tuple({"input": p["input"], "output": p["output"]} for p in pairs), None, tuple(timeouts))

    def __len__(self) -> int:
        return len(self.tests)


@dataclass
class TestOutcome:
    """What happened to one test."""

    __test__ = False

    test: str  # the assert snippet, or the stdin input
    passed: bool
    expected: str | None = None
    actual: str | None = None
    error: str | None = None  # one line, e.g. "AssertionError" or "ZeroDivisionError: division by zero"
    traceback: str | None = None  # an excerpt, the user program's frames only
    timed_out: bool = False
    reason: str | None = None  # wrong answer | error | timeout | crash | memory | output limit | syntax
    digest: str | None = None  # a fingerprint of an output too long for ``actual`` (to tell such outputs apart)
    seconds: float | None = None  # the call's own time (``calls`` suites)


@dataclass
class ExecutionResult:
    """The result of running one program against one test suite."""

    passed: int
    total: int
    outcomes: list[TestOutcome] = field(default_factory=list)
    wall_s: float = 0.0
    error: str | None = None  # a failure of the whole program (e.g. a syntax error)

    @property
    def pass_rate(self) -> float:
        """Fraction of tests passed; 0 for an empty suite."""
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        """True when every test passed (and there was at least one)."""
        return self.total > 0 and self.passed == self.total

    def to_dict(self) -> dict:
        """Plain JSON-able form."""
        return asdict(self)

    def summary(self) -> dict:
        """The small, state-friendly form stored on a search node."""
        return {
            "passed": self.passed,
            "total": self.total,
            "pass_rate": self.pass_rate,
            "error": self.error,
            "wall_s": round(self.wall_s, 3),
        }


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


def prm_feedback(result: ExecutionResult) -> str:
    """The public-test feedback CodePRM's verifier and refine prompts see (its released code's format).

    "All public test cases passed!", or up to 5 failing tests as "## Failed test i:" with the input,
    the ground truth and the current output (an assert test shows itself instead of input and truth);
    tests whose text is over the size limit are left out unless all are, then they are cut.
    """
    if result.all_passed:
        return PRM_PASSED
    if not result.total:
        return "No public test cases."
    shown = [_prm_failure(o) for o in result.outcomes if not o.passed]
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
    return execution_report(o, current_output(o, "TIMEOUT"))
