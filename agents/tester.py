"""Tester: inputs that tell candidate programs apart, optionally with expected outputs (CodeT).

Function problems get calls of the entry point, kept only when one parses as a call of it; stdio problems
get stdin texts. In ``codet`` mode each input comes with the output the model expects. Duplicates are
dropped; a reply with nothing usable is a parse failure (the caller falls back to mutated inputs).
"""

from __future__ import annotations

import ast
import re

from langchain_core.language_models import BaseChatModel

from codeforest.agents.base import Reply, acts_as, call_model, messages
from codeforest.problems import Problem
from codeforest.prompts import Prompt
from codeforest.tools.probes import valid_call

_TAG = re.compile(r"<input>\n?(.*?)</input>(?:\s*<output>\n?(.*?)</output>)?", re.S | re.I)
_FENCES = re.compile(r"\A\s*```[^\n]*\n|\n?```\s*\Z")  # a code fence opening or closing a tag's text
_LINE_PREFIX = re.compile(r"^\s*(?:[-*]|\d+[.)])?\s*`*(?:>>>\s*)?")  # a list mark, code ticks, a doctest prompt


def parse_calls(text: str, entry_point: str, with_expected: bool) -> list[dict]:
    """``{"input": call, "expected": repr or None}`` for each usable line, duplicates dropped."""
    found: dict[str, str | None] = {}
    for line in text.splitlines():
        line = _LINE_PREFIX.sub("", line).rstrip("`; ")
        if with_expected:
            if not line.startswith("assert"):  # `f(1) == 2` is read as its assert
                line = f"assert {line}"
            try:
                node = ast.parse(line).body[0]
            except (SyntaxError, IndexError):
                continue
            test = getattr(node, "test", None)
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
                continue
            call = valid_call(ast.unparse(test.left), entry_point)
            try:
                expected = repr(ast.literal_eval(test.comparators[0]))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # e.g. {[1]: 2}
                continue
        else:
            call, expected = valid_call(line, entry_point), None
        if call and call not in found:
            found[call] = expected
    return [{"input": call, "expected": expected} for call, expected in found.items()]


def parse_stdin(text: str, with_expected: bool) -> list[dict]:
    """``{"input": text, "expected": output or None}`` for each <input> block, duplicates dropped."""
    found: dict[str, str | None] = {}
    for given, output in _TAG.findall(text):
        given, output = _FENCES.sub("", given), _FENCES.sub("", output)
        if with_expected and not output.strip():
            continue
        given = given.strip("\n") + "\n"
        if given.strip() and given not in found:
            found[given] = output.strip() if with_expected else None
    return [{"input": given, "expected": expected} for given, expected in found.items()]


@acts_as("tester")
def write_inputs(model: BaseChatModel, prompt: Prompt, problem: Problem, *, k: int = 10,
                 codet: bool = False) -> Reply[list[dict]]:
    """Up to ``k`` inputs for the problem (with expected outputs in ``codet`` mode); none readable: a parse failure."""
    stdio = problem["kind"] == "stdio"
    key = ("stdin_codet" if codet else "stdin") if stdio else ("codet" if codet else "calls")
    user = prompt.render(key, problem=problem["prompt"], k=k, entry_point=problem.get("entry_point") or "")
    raw, cost = call_model(model, messages(prompt.render("system"), user))
    items = parse_stdin(raw, codet) if stdio else parse_calls(raw, problem["entry_point"], codet)
    return Reply(items[:k], raw, cost, parsed=bool(items))
