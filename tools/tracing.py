"""Block-level execution traces, as LDB and RethinkMCTS use them.

The program is split into basic blocks (straight-line statements; a branch or loop header ends a
block, a loop header is a block of its own, a return/break/continue/raise ends one). One failing
test runs inside the sandbox under a line tracer; the executed lines are grouped into the sequence
of blocks they belong to, with the variable values at each block's entry and exit, and rendered
as ``[BLOCK-i]`` sections with ``# var=value`` lines. When tracing fails or times out, the plain
"expected X, got Y" feedback stands in.
"""

from __future__ import annotations

import ast
import itertools
import textwrap
from dataclasses import dataclass, field

from codeforest.suites import ExecutionResult, TestOutcome, TestSuite
from codeforest.tools.sandbox import get_sandbox
from codeforest.tools.stopwatch import SANDBOX, timed
from codeforest.tools.testing import is_stdin_test

MAX_BLOCKS = 10  # first 5 + last 5, as RethinkMCTS's released code caps the trace
TRACE_TIMEOUT_S = 5.0


def basic_blocks(code: str) -> dict[int, int]:
    """Map each source line of ``code`` to the id of the basic block it belongs to."""
    tree = ast.parse(code)
    line_block: dict[int, int] = {}
    ids = itertools.count()

    def assign(first: int, last: int, block: int) -> None:
        for line in range(first, last + 1):
            line_block.setdefault(line, block)

    def visit(body: list[ast.stmt]) -> None:
        current: int | None = None
        for stmt in body:
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                header_end = (stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.test).end_lineno
                assign(stmt.lineno, header_end, next(ids))  # re-entered every iteration: a block of its own
                visit(stmt.body)
                visit(stmt.orelse)
                current = None
            elif isinstance(stmt, ast.If):
                current = next(ids) if current is None else current
                assign(stmt.lineno, stmt.test.end_lineno, current)  # the test ends the block
                visit(stmt.body)
                visit(stmt.orelse)
                current = None
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                current = next(ids) if current is None else current
                assign(stmt.lineno, stmt.items[-1].context_expr.end_lineno, current)
                visit(stmt.body)
                current = None
            elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                visit(stmt.body)
                for handler in stmt.handlers:
                    assign(handler.lineno, handler.lineno, next(ids))
                    visit(handler.body)
                visit(stmt.orelse)
                visit(stmt.finalbody)
                current = None
            elif isinstance(stmt, ast.Match):
                current = next(ids) if current is None else current
                assign(stmt.lineno, stmt.subject.end_lineno, current)
                for case in stmt.cases:
                    visit(case.body)
                current = None
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                current = next(ids) if current is None else current
                first = min([d.lineno for d in stmt.decorator_list] + [stmt.lineno])
                assign(first, stmt.body[0].lineno - 1, current)
                visit(stmt.body)
            else:
                current = next(ids) if current is None else current
                assign(stmt.lineno, stmt.end_lineno or stmt.lineno, current)
                if isinstance(stmt, (ast.Return, ast.Break, ast.Continue, ast.Raise)):
                    current = None

    visit(tree.body)
    return line_block


@dataclass
class BlockStep:
    """One executed block: its lines, and the variables before and after it."""

    block: int
    function: str
    lines: list[int] = field(default_factory=list)
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] | None = None
    returned: str | None = None


@dataclass
class Trace:
    """The executed block sequence of one test."""

    test: str
    steps: list[BlockStep]
    omitted_events: int = 0
    exception: str | None = None


def group_blocks(code: str, events: list[dict]) -> list[BlockStep]:
    """Group line/return events into executed basic blocks, frame by frame."""
    line_block = basic_blocks(code)
    steps: list[BlockStep] = []
    open_steps: dict[int, BlockStep] = {}
    for event in events:
        if event.get("event") == "gap":
            open_steps.clear()
            continue
        frame = event["frame"]
        current = open_steps.get(frame)
        if event["event"] == "return":
            if current is not None:
                current.after = event["vars"]
                current.returned = event.get("ret")
                del open_steps[frame]
            continue
        block = line_block.get(event["line"], -event["line"])
        last_step = steps[-1] if steps else None
        if current is not None and current.block == block and current is last_step \
                and event["line"] > current.lines[-1]:
            current.lines.append(event["line"])
            continue
        if current is not None:
            current.after = event["vars"]
        step = BlockStep(block=block, function=event["fn"], lines=[event["line"]], before=event["vars"])
        steps.append(step)
        open_steps[frame] = step
    return steps


def trace_test(code: str, tests: TestSuite, index: int, *, timeout: float = TRACE_TIMEOUT_S,
               backend: str | None = None) -> Trace | None:
    """Trace test ``index`` of ``tests`` in the sandbox; None when the trace fails or times out."""
    try:
        basic_blocks(code)
    except SyntaxError:
        return None
    with timed(SANDBOX):
        reply = get_sandbox(backend).trace(code, tests, index, timeout=timeout)
    events = reply.get("trace")
    if not events:
        return None
    steps = group_blocks(code, events)
    if not steps:
        return None
    omitted = sum(e.get("dropped", 0) for e in events if e.get("event") == "gap")
    case = tests.tests[index]
    test = case["input"] if isinstance(case, dict) else case
    return Trace(test=test, steps=steps, omitted_events=omitted, exception=reply.get("exception"))


def render_trace(trace: Trace, code: str, max_blocks: int = MAX_BLOCKS) -> str:
    """The RethinkMCTS text: ``[BLOCK-i]`` sections, ``# var=value`` lines before and after."""
    source = code.splitlines()
    steps = list(enumerate(trace.steps))
    if len(steps) > max_blocks:
        half = max_blocks // 2
        steps = steps[:half] + [(-1, None)] + steps[-half:]
    parts = []
    for index, step in steps:
        if step is None:
            parts.append(f"... ({len(trace.steps) - max_blocks} blocks omitted) ...")
            continue
        body = textwrap.dedent("\n".join(source[n - 1] for n in step.lines if 0 < n <= len(source)))
        lines = [f"[BLOCK-{index}]", _vars_line(step.before)]
        lines += body.splitlines()
        after = dict(step.after or {})
        if step.returned is not None:
            after["_ret"] = step.returned
        if step.after is not None or step.returned is not None:
            lines.append(_vars_line(after))
        parts.append("\n".join(lines))
    text = "\n".join(parts)
    if trace.exception:
        text += f"\n# the execution raised {trace.exception}"
    return text


def _vars_line(values: dict[str, str]) -> str:
    return "# " + " ".join(f"{k}={v}" for k, v in values.items()) if values else "# (no variables)"


def plain_feedback(outcome: TestOutcome) -> str:
    """The fallback when no trace is available: the test, what was expected and what came out."""
    got = "a time-out" if outcome.timed_out else (outcome.error if outcome.actual is None else outcome.actual)
    if is_stdin_test(outcome):
        return f"For input {outcome.test!r} the expected output is {outcome.expected!r} but the real output is {got!r}"
    return f"The assertion is {outcome.test.strip()} but the real execution output is {got}"


def failing_test_trace(code: str, tests: TestSuite, result: ExecutionResult, *, timeout: float = TRACE_TIMEOUT_S,
                       backend: str | None = None) -> tuple[str, int | None]:
    """The rendered trace of the first failing test whose trace succeeds, and that test's index.

    Falls back to :func:`plain_feedback` of the first failing test (index None) when no trace works.
    """
    failing = [i for i, o in enumerate(result.outcomes) if not o.passed]
    for index in failing:
        trace = trace_test(code, tests, index, timeout=timeout, backend=backend)
        if trace is not None:
            return render_trace(trace, code), index
    if failing:
        return plain_feedback(result.outcomes[failing[0]]), None
    return "", None
