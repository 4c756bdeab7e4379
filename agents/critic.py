"""Critic: a 0-5 closeness score for failing outputs, and a True/False verdict for visible passes."""

from __future__ import annotations

import json
import re

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from codeforest.agents.base import (
    Reply,
    acts_as,
    call_model,
    messages,
    render_formatted,
    structured_call,
    with_system,
    without_output_limit,
)
from codeforest.problems import Problem
from codeforest.prompts import Prompt

SCORE_SCHEMA = {"title": "Score", "description": "Closeness of outputs, 0-5.", "type": "object",
                "properties": {"analysis": {"type": "string", "maxLength": 600},
                               "score": {"type": "integer", "minimum": 0, "maximum": 5}},
                "required": ["analysis", "score"], "additionalProperties": False}
VERDICT_SCHEMA = {"title": "Verdict", "description": "Whether the solution generalises.", "type": "object",
                  "properties": {"analysis": {"type": "string", "maxLength": 600}, "verdict": {"type": "boolean"}},
                  "required": ["analysis", "verdict"], "additionalProperties": False}
SCORE_FALLBACK = 0
VERDICT_FALLBACK = True  # the released code accepts a reply it cannot read


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def parse_score(text: str) -> int | None:
    """The final integer 0-5 of the last line that is not blank; else the largest digit 0-5 in it."""
    last = _last_line(text).strip("*`. ")
    match = re.search(r"(?<!\d)([0-5])(?:\s*(?:/|out of)\s*5)?$", last)
    if match:
        return int(match.group(1))
    return _largest_score_digit(last)


def parse_score_released(text: str) -> int | None:
    """The released CodeTree's reading (``test_eval_parser``): the largest digit 0-5 anywhere in the reply's last
    line, blank or not ("... is 125, not 1. The final score is 0." reads 5); None (its 0) when it holds none. (An
    empty reply, which the released code cannot split, reads None too.)"""
    lines = text.splitlines()
    return _largest_score_digit(lines[-1] if lines else "")


def _largest_score_digit(line: str) -> int | None:
    digits = re.findall(r"[0-5]", line)
    return max(map(int, digits)) if digits else None


def parse_verdict(text: str) -> bool | None:
    """"false" in the last line rejects, "true" accepts; anything else is unreadable (None)."""
    last = _last_line(text).lower()
    if "false" in last:
        return False
    if "true" in last:
        return True
    return None


def text_analysis(text: str) -> str:
    """The reasoning before a judgement's last line, as the released CodeTree keeps it: the lines that are not
    blank, but the last; a reply of one or two such lines gives its first."""
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:-1]) if len(lines) > 2 else (lines[0] if lines else "")


def _judge(model, prompt: Prompt, task: str, problem: Problem, code: str, feedback: str, schema: dict,
           key: str, parse, fallback, structured: bool) -> Reply:
    system, structured = render_formatted(prompt, f"{task}.system", f"{task}.answer_format", structured)
    user = prompt.render(f"{task}.user", problem=problem["prompt"], code=code, feedback=feedback.strip())
    parsed, raw, cost = structured_call(model, messages(system, user), schema,
                                        enabled=structured)
    if parsed is not None and key in parsed:
        return Reply(parsed[key], raw, cost, analysis=str(parsed.get("analysis", "")))
    value = parse(raw)
    analysis = text_analysis(raw)
    if value is None:
        return Reply(fallback, raw, cost, parsed=False, analysis=analysis or raw.strip())
    return Reply(value, raw, cost, analysis=analysis)


@acts_as("critic")
def score_tests(model: BaseChatModel, prompt: Prompt, problem: Problem, *, code: str, feedback: str,
                structured: bool = False, released: bool = False) -> Reply[int]:
    """How close the failing outputs are to the expected ones, 0-5 (unreadable: 0); ``released``: a text reply
    read as the released CodeTree reads it (``parse_score_released``)."""
    return _judge(model, prompt, "score", problem, code, feedback, SCORE_SCHEMA, "score",
                  parse_score_released if released else parse_score, SCORE_FALLBACK, structured)


@acts_as("critic")
def verify(model: BaseChatModel, prompt: Prompt, problem: Problem, *, code: str, feedback: str,
           structured: bool = False) -> Reply[bool]:
    """Whether a program that passes the visible tests generalises (unreadable: accepted)."""
    return _judge(model, prompt, "verify", problem, code, feedback, VERDICT_SCHEMA, "verdict", parse_verdict,
                  VERDICT_FALLBACK, structured)


SELF_EVAL_SCHEMA = {"title": "SelfEvaluation", "description": "Correctness score in [-1, 1].", "type": "object",
                    "properties": {"evaluation": {"type": "number", "minimum": -1, "maximum": 1},
                                   "explanation": {"type": "string", "maxLength": 400}},
                    "required": ["evaluation", "explanation"], "additionalProperties": False}
BLOCKS_SCHEMA = {"title": "BlockAnalysis", "description": "Each traced block judged.", "type": "object",
                 "properties": {"blocks": {"type": "array", "maxItems": 12, "items": {
                     "type": "object", "properties": {"block": {"type": "string", "maxLength": 20},
                                                      "correct": {"type": "boolean"},
                                                      "explanation": {"type": "string", "maxLength": 300}},
                     "required": ["block", "correct", "explanation"], "additionalProperties": False}}},
                 "required": ["blocks"], "additionalProperties": False}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def parse_evaluation(text: str, clamp: bool = True) -> float | None:
    """The first number in the reply (the released code's rule), clamped to [-1, 1] unless ``clamp`` is off (the
    released code uses it as written)."""
    match = _NUMBER.search(text)
    if match is None:
        return None
    return max(-1.0, min(1.0, float(match.group()))) if clamp else float(match.group())


@acts_as("critic")
def self_evaluate(model: BaseChatModel, prompt: Prompt, problem: Problem, *, thoughts: str, code: str,
                  structured: bool = False, clamp: bool = True) -> Reply[float]:
    """RethinkMCTS's self-evaluation v_llm ∈ [-1, 1] of a program passing the public tests (unreadable: 0.0;
    ``clamp`` off: the number as written)."""
    user, structured = render_formatted(prompt, "self_eval", "self_eval_format", structured,
                                        problem=problem["prompt"], thoughts=thoughts, code=code)
    parsed, raw, cost = structured_call(model, with_system(prompt, user, "self_eval_system"), SELF_EVAL_SCHEMA,
                                        enabled=structured)
    if parsed is not None and isinstance(parsed.get("evaluation"), int | float):
        value = max(-1.0, min(1.0, float(parsed["evaluation"])))
        return Reply(value, raw, cost, analysis=str(parsed.get("explanation", "")))
    value = parse_evaluation(raw, clamp)
    if value is None:
        return Reply(0.0, raw, cost, parsed=False, analysis=raw.strip())
    return Reply(value, raw, cost, analysis=raw.strip())


@acts_as("critic")
def analyze_blocks(model: BaseChatModel, prompt: Prompt, problem: Problem, *, code: str, test: str, output: str,
                   trace: str, structured: bool = False) -> Reply[str]:
    """The LDB-style judgement of each traced block, as text to append to the verbal feedback."""
    user, structured = render_formatted(prompt, "blocks", "blocks_format", structured, problem=problem["prompt"],
                                        code=code, test=test, output=output, trace=trace)
    parsed, raw, cost = structured_call(model, with_system(prompt, user, "blocks_system"), BLOCKS_SCHEMA,
                                        enabled=structured)
    if parsed is not None and isinstance(parsed.get("blocks"), list):
        return Reply("\n".join(json.dumps(b) for b in parsed["blocks"]), raw, cost)
    return Reply(raw.strip(), raw, cost)


LDB_STOPS = ["[debug end]", "Here is the updated code:"]  # the released LDB chat's stop strings


@acts_as("critic")
def analyze_blocks_released(model: BaseChatModel, prompt: Prompt, *, problem: str, thoughts: str, program: str,
                            failed_test: str, trace: str) -> Reply[str]:
    """LDB's block analysis as the released RethinkMCTS asks for it: a chat of the system message, the task with
    the problem and ``thoughts``, the ``program`` as the model's own answer, and the failed test with the ``trace``
    blocks; with its stop strings, ``top_p`` 1, ``n`` 1 and no output limit. The reply is kept as written."""
    chat = [SystemMessage(prompt.render("blocks_system")),
            HumanMessage(prompt.render("blocks_task", problem=problem, thoughts=thoughts)), AIMessage(program),
            HumanMessage(prompt.render("blocks_released", failed_test=failed_test, trace=trace))]
    raw, cost = call_model(without_output_limit(model).bind(stop=LDB_STOPS, top_p=1, n=1), chat)
    return Reply(raw, raw, cost)


def _tagged_number(text: str, tag: str) -> float | None:
    match = re.search(rf"<{tag}>\s*(-?\d+(?:\.\d+)?)", text, re.I)
    return None if match is None else float(match.group(1))


@acts_as("critic")
def score_steps(model: BaseChatModel, prompt: Prompt, problem: str, *, steps: list[str]) -> Reply[float]:
    """RPM-MCTS's step critic: 0-10 for a partial solution (released rubric); unreadable: 0 (counted)."""
    raw, cost = _call_model_text(model, prompt.render("critic", problem=problem, steps="\n".join(steps)))
    value = _tagged_number(raw, "score")
    return Reply(0.0 if value is None else max(0.0, min(10.0, value)), raw, cost, parsed=value is not None)


@acts_as("critic")
def evaluate_solution(model: BaseChatModel, prompt: Prompt, problem: str, *, steps: list[str], code: str,
                      results: str) -> Reply[float]:
    """RPM-MCTS's solution evaluator: 0-10 from steps, code and sandbox results; unreadable: 5.0 (released)."""
    raw, cost = _call_model_text(model, prompt.render("evaluate", problem=problem, steps="\n".join(steps), code=code,
                                                     results=results))
    value = _tagged_number(raw, "evaluation")
    analysis = re.sub(r"<evaluation>.*?(</evaluation>|\Z)", "", raw, flags=re.S | re.I).strip()
    return Reply(5.0 if value is None else max(0.0, min(10.0, value)), raw, cost, parsed=value is not None,
                 analysis=analysis)


@acts_as("locator")
def locate_error(model: BaseChatModel, prompt: Prompt, problem: str, *, steps: list[str], code: str, debug: str,
                 fallback: int, released: bool = False) -> Reply[int]:
    """RPM-MCTS's error-step locator: the 1-based number of the first wrong step and the points to note.

    The number is read from ``<step_n>3</step_n>`` or, as the 1.5B model writes it, ``<step_3>x</step_3>``.
    Unreadable or out of range: ``fallback`` (RPM-MCTS passes the simulated step, as the released code does: it
    takes the 0-based index of the first rolled step, read as a 1-based step number). ``released``: only a whole
    integer in ``<step_n></step_n>`` is read, in range or not, as the released code reads it.
    """
    raw, cost = _call_model_text(model, prompt.render("locate", problem=problem, steps="\n".join(steps), code=code,
                                                     debug=debug))
    analysis = re.sub(r"<(?:step_n|step_\d+)>[^<\n]*(?:</step_[^>]*>)?", "", raw, flags=re.I).strip()
    if released:
        tagged = re.search(r"<step_n>(.*?)</step_n>", raw, re.S)
        number = int(tagged.group(1)) if tagged and re.fullmatch(r"\s*[-+]?\d+\s*", tagged.group(1)) else None
        return Reply(fallback if number is None else number, raw, cost, parsed=number is not None,
                     analysis=analysis)
    named = re.search(r"<step_n>\s*(?:step\s*)?(\d+)", raw, re.I) or re.search(r"<step_(\d+)>", raw, re.I)
    number = int(named.group(1)) if named else None
    readable = number is not None and 1 <= number <= len(steps)
    return Reply(number if readable else fallback, raw, cost, parsed=readable, analysis=analysis)


def _call_model_text(model: BaseChatModel, user: str) -> tuple[str, dict]:
    """One user message, the reply's text and cost."""
    return call_model(model, [HumanMessage(user)])
