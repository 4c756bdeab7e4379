"""Test suites and execution results: the plain data that crosses the sandbox boundary.

A function-style test is a snippet of Python run after the program in the same namespace
(an ``assert`` line, or a whole ``check(candidate)`` block); it passes when it raises nothing.
A stdin/stdout test is an input string and the expected output.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal, get_args

Kind = Literal["function", "stdio"]
KINDS: tuple[str, ...] = get_args(Kind)


@dataclass(frozen=True)
class TestSuite:
    """Tests of one kind for one program: assert snippets (with an entry point), stdin/stdout pairs, or calls of
    the entry point whose returned values are wanted (``calls``: each test the JSON of its plain-data arguments,
    ``tools.testing.calls_suite`` builds one).

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
