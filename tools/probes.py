"""Inputs that tell programs apart, and what each program does on them.

Two sources of inputs: type-aware mutations of the public tests' inputs (EvalPlus's idea: numbers nudged,
zeroed and sign-flipped; lists and strings emptied, shortened, extended, duplicated, sorted, reversed; the
same on stdin tokens), deterministic from a seed; and calls a model wrote, kept only when they parse and
call the entry point. A program's output vector on the inputs (``probe``) holds, for each input, the value's
repr (or the printed output), the exception's type, or a time-out; ``behaviour`` turns an output into what the
tests compare. Everything but ``probe`` is pure.
"""

from __future__ import annotations

import ast
import random
import re

from codeforest.problems import Problem
from codeforest.suites import ExecutionResult, TestSuite
from codeforest.tools._runner import digest, printed_digest, value_digest
from codeforest.tools.sandbox import run
from codeforest.tools.testing import printed

TIMEOUT, RAISED = "<timeout>", "<raised {}>"
FINGERPRINT = "<sha256 {}>"  # an output as grouped (and a long one's mark after its cut text)
_DIGEST = re.compile(r"<sha256 [0-9a-f]{16}>$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


# --- inputs of the public tests -----------------------------------------------------------------------

def public_calls(problem: Problem) -> list[str]:
    """The entry-point calls in a function problem's public asserts (``f(1, [2])`` of ``assert f(1, [2]) == 3``)."""
    calls = []
    for test in problem.get("public_tests") or []:
        try:
            tree = ast.parse(test)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if is_entry_call(node, problem["entry_point"]):
                source = ast.unparse(node)
                if source not in calls:
                    calls.append(source)
                break
    return calls


def public_stdin(problem: Problem) -> list[str]:
    """The inputs of a stdio problem's public tests."""
    return [case["input"] for case in problem.get("public_tests") or []]


def is_entry_call(node: ast.AST, entry_point: str) -> bool:
    """A call of the entry point by name."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point


def valid_call(source: str, entry_point: str) -> str | None:
    """The call in canonical form when ``source`` is one expression calling the entry point, else None."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError:
        return None
    return ast.unparse(tree.body) if is_entry_call(tree.body, entry_point) else None


# --- type-aware mutation (no model call) --------------------------------------------------------------

def mutate_value(value: object) -> list[object]:
    """Variants of one literal of the same type: EvalPlus's nudges for numbers, edits for sequences."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        kind = type(value)
        return [kind(value + 1), kind(value - 1), kind(0), kind(-value)]
    if isinstance(value, str | list | tuple):
        half = value[:len(value) // 2]
        variants = [value[:0], half, value + value[-1:], value + value, value[::-1]]
        try:
            ordered = sorted(value)
            variants.append("".join(ordered) if isinstance(value, str) else type(value)(ordered))
        except TypeError:
            pass
        return variants
    if isinstance(value, dict) and value:
        return [{}, dict(list(value.items())[:-1])]
    return []


def mutate_call(call: str, entry_point: str) -> list[str]:
    """Calls with one literal argument changed at a time (arguments that are not literals stay as they are)."""
    node = ast.parse(call, mode="eval").body
    if not is_entry_call(node, entry_point):
        return []
    mutated = []
    for i, arg in enumerate(node.args):
        try:
            value = ast.literal_eval(arg)
        except ValueError:
            continue
        for variant in mutate_value(value):
            args = [*map(ast.unparse, node.args[:i]), repr(variant), *map(ast.unparse, node.args[i + 1:])]
            keywords = [ast.unparse(k) for k in node.keywords]
            mutated.append(f"{entry_point}({', '.join(args + keywords)})")
    return mutated


def mutate_stdin(text: str) -> list[str]:
    """Inputs with one token changed as ``mutate_value`` changes its type (a number nudged, zeroed or
    sign-flipped; a word emptied, shortened, extended, duplicated, reversed or sorted), or one line's tokens
    reversed or sorted (numerically when they are all numbers)."""
    lines = text.split("\n")
    mutated = []

    def with_line(li: int, tokens: list[str]) -> str:
        return "\n".join(lines[:li] + [" ".join(t for t in tokens if t)] + lines[li + 1:])

    for li, line in enumerate(lines):
        tokens = line.split()
        for ti, token in enumerate(tokens):
            value = (float(token) if "." in token else int(token)) if _NUMBER.match(token) else token
            for variant in mutate_value(value):
                if str(variant) != token:
                    mutated.append(with_line(li, tokens[:ti] + [str(variant)] + tokens[ti + 1:]))
        if len(tokens) > 1:
            numeric = all(_NUMBER.match(t) for t in tokens)
            ordered = sorted(tokens, key=float) if numeric else sorted(tokens)
            for edited in (tokens[::-1], ordered):
                if edited != tokens:
                    mutated.append(with_line(li, edited))
    return list(dict.fromkeys(mutated))


def mutated_inputs(problem: Problem, seed: int, limit: int) -> list[str]:
    """Up to ``limit`` distinct mutations of the public inputs, drawn with ``seed`` (the public inputs excluded)."""
    if problem["kind"] == "stdio":
        public = public_stdin(problem)
        pool = [m for text in public for m in mutate_stdin(text)]
    else:
        public = public_calls(problem)
        pool = [m for call in public for m in mutate_call(call, problem["entry_point"])]
    distinct = list(dict.fromkeys(m for m in pool if m not in public))
    rng = random.Random(f"{seed}:{problem['id']}")
    return distinct if len(distinct) <= limit else rng.sample(distinct, limit)


# --- behaviour on the inputs (runs in the sandbox) -----------------------------------------------------

def probe_suite(problem: Problem, inputs: list[str], expected: list[str | None] | None = None) -> TestSuite:
    """The inputs as a suite whose outcomes carry each output; an input's expected output (a CodeT assert's
    value, or stdout) makes its outcome that assert's verdict (a placeholder otherwise)."""
    expected = expected or [None] * len(inputs)
    if problem["kind"] == "stdio":
        return TestSuite.stdio([{"input": text, "output": want or ""} for text, want in zip(inputs, expected,
                                                                                            strict=True)])
    return TestSuite.function([f"assert {call} == {'None' if want is None else want}"
                               for call, want in zip(inputs, expected, strict=True)], problem["entry_point"])


def no_answer(output: str) -> bool:
    """True for an output that is a raise or a time-out rather than an answer."""
    return output == TIMEOUT or output.startswith("<raised ")


def behaviour(output: str, *, stdio: bool = False) -> str:
    """An output as the tests compare it, so programs that the tests cannot tell apart group together, as a
    fingerprint: printed output by its whitespace-separated tokens, numbers by value (``outputs_match``: ``0.5`` =
    ``0.500000``, ``3`` = ``3.0``, floats to 6 significant digits, below 1e-6 zero); a returned value by ``==``
    (``3`` = ``3.0``, a dict in any order, floats to 12 significant digits, below 1e-9 zero); an output too long to
    show whole by the fingerprint the sandbox took of all of it, the same function of the same value
    (``_runner.canonical``). A raise or a time-out stays as it is."""
    if no_answer(output):
        return output
    long = _DIGEST.search(output)
    if long:
        return long.group(0)
    if stdio:
        return FINGERPRINT.format(printed_digest(output))
    try:
        value = ast.literal_eval(output)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return FINGERPRINT.format(digest(output))  # not a literal (an object's repr): its text
    return FINGERPRINT.format(value_digest(value, output))


def displayed(output: str) -> str:
    """An output as a person (or the judge) reads it: without the fingerprint of a long one."""
    return _DIGEST.sub("", output).rstrip()


def output_vector(result: ExecutionResult, count: int, *, stdio: bool = False) -> tuple[str, ...]:
    """One entry per input: the output, ``<raised Type>`` or ``<timeout>`` (a program that did not run raises).
    An ``AssertionError`` the program raised itself (it has a traceback) is raised, not an answer."""
    outputs = []
    for i in range(count):
        outcome = result.outcomes[i] if i < len(result.outcomes) else None
        if outcome is None:
            outputs.append(RAISED.format((result.error or "Error").split(":")[0]))
        elif outcome.timed_out:
            outputs.append(TIMEOUT)
        elif outcome.passed or (outcome.reason == "wrong answer" and not outcome.traceback):  # it returned
            actual = outcome.actual or ""
            shown = printed(actual) if stdio else actual
            outputs.append(f"{shown} {FINGERPRINT.format(outcome.digest)}" if outcome.digest else shown)
        else:
            outputs.append(RAISED.format((outcome.error or "Error").split(":")[0]))
    return tuple(outputs)


def probe(problem: Problem, code: str, inputs: list[str], *, expected: list[str | None] | None = None,
          timeout: float = 2.0, backend: str | None = None) -> tuple[tuple[str, ...], frozenset[int]]:
    """A program's output vector on the inputs, run in the sandbox, and the inputs whose expected output it
    gives (compared as the public tests are: ``==`` on values, ``outputs_match`` on stdout)."""
    if not inputs:
        return (), frozenset()
    result = run(code, probe_suite(problem, inputs, expected), timeout=timeout, backend=backend)
    outputs = output_vector(result, len(inputs), stdio=problem["kind"] == "stdio")
    wanted = expected or [None] * len(inputs)
    passed = frozenset(i for i, outcome in enumerate(result.outcomes[:len(inputs)])
                       if wanted[i] is not None and outcome.passed)
    return outputs, passed


def rejected(outputs: list[str]) -> bool:
    """An input that most candidates raise or time out on: probably outside the problem's preconditions."""
    failed = sum(1 for o in outputs if no_answer(o))
    return failed * 2 > len(outputs)
