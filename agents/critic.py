"""Critic: a 0-5 closeness score for failing outputs, and a True/False verdict for visible passes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from codeforest.agents.base import structured_call
from codeforest.problems import Problem
from codeforest.prompts import Prompt

SCORE_SCHEMA = {"title": "Score", "description": "Closeness of outputs, 0-5.", "type": "object",
                "properties": {"analysis": {"type": "string"}, "score": {"type": "integer", "minimum": 0,
                                                                          "maximum": 5}},
                "required": ["analysis", "score"], "additionalProperties": False}
VERDICT_SCHEMA = {"title": "Verdict", "description": "Whether the solution generalises.", "type": "object",
                  "properties": {"analysis": {"type": "string"}, "verdict": {"type": "boolean"}},
                  "required": ["analysis", "verdict"], "additionalProperties": False}
SCORE_FALLBACK = 0
VERDICT_FALLBACK = True  # the released code accepts a reply it cannot read


@dataclass
class Judgement:
    """A Critic answer: ``value`` is the score or the verdict; ``parsed`` False means the fallback was used."""

    value: int | bool
    analysis: str
    raw: str
    cost: dict
    parsed: bool


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def parse_score(text: str) -> int | None:
    """The final integer 0-5 of the last line; else the largest digit 0-5 in it (the released code's rule)."""
    last = _last_line(text).strip("*`. ")
    match = re.search(r"(?<!\d)([0-5])(?:\s*(?:/|out of)\s*5)?$", last)
    if match:
        return int(match.group(1))
    digits = [int(d) for d in re.findall(r"[0-5]", last)]
    return max(digits) if digits else None


def parse_verdict(text: str) -> bool | None:
    """"false" in the last line rejects, "true" accepts; anything else is unreadable (None)."""
    last = _last_line(text).lower()
    if "false" in last:
        return False
    if "true" in last:
        return True
    return None


def _judge(model, prompt: Prompt, task: str, problem: Problem, code: str, feedback: str, schema: dict,
           key: str, parse, fallback, structured: bool) -> Judgement:
    system = prompt.render(f"{task}.system")
    if structured:
        system = f"{system}\n{prompt.render(f'{task}.structured')}"
    user = prompt.render(f"{task}.user", problem=problem["prompt"], code=code, feedback=feedback)
    parsed, raw, cost = structured_call(model, [SystemMessage(system), HumanMessage(user)], schema,
                                        enabled=structured)
    if parsed is not None and key in parsed:
        return Judgement(parsed[key], str(parsed.get("analysis", "")), raw, cost, True)
    value = parse(raw)
    analysis = "\n".join(raw.strip().splitlines()[:-1]).strip()
    if value is None:
        cost["parse_failures"] = 1
        return Judgement(fallback, analysis or raw.strip(), raw, cost, False)
    return Judgement(value, analysis, raw, cost, True)


def score_tests(model: BaseChatModel, prompt: Prompt, problem: Problem, *, code: str, feedback: str,
                structured: bool = False) -> Judgement:
    """How close the failing outputs are to the expected ones, 0-5 (unreadable: 0)."""
    return _judge(model, prompt, "score", problem, code, feedback, SCORE_SCHEMA, "score", parse_score,
                  SCORE_FALLBACK, structured)


def verify(model: BaseChatModel, prompt: Prompt, problem: Problem, *, code: str, feedback: str,
           structured: bool = False) -> Judgement:
    """Whether a program that passes the visible tests generalises (unreadable: accepted)."""
    return _judge(model, prompt, "verify", problem, code, feedback, VERDICT_SCHEMA, "verdict", parse_verdict,
                  VERDICT_FALLBACK, structured)
