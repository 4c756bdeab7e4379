"""Thinker: strategies for a problem, and reflections on a failing solution (CodeTree's wording).

CodeTree's format is numbered lines, not JSON, so the Thinker parses text (no schema-constrained decoding).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from codeforest.agents.base import call_model
from codeforest.problems import Problem
from codeforest.prompts import Prompt

DYNAMIC = {"strategy": "multiple", "reflection": "one or multiple (if there is)"}
_NUMBERED = re.compile(r"^\s*(?:<(\d+)>|\(?(\d+)[.):])\s*(.+?)\s*$")
MIN_ITEM_CHARS = 5  # the released code drops shorter lines


@dataclass
class Ideas:
    """Parsed alternatives; ``parsed`` is False when the reply held none."""

    items: list[str]
    raw: str
    cost: dict
    parsed: bool


def parse_numbered(text: str, limit: int) -> list[str]:
    """Numbered lines ("1. ...", "2) ...", "<3> ...") as a list, short ones dropped, at most ``limit``."""
    items = []
    for line in text.splitlines():
        match = _NUMBERED.match(line)
        if match and len(match.group(3)) >= MIN_ITEM_CHARS:
            items.append(match.group(3))
    return items[:limit]


def _ask(model: BaseChatModel, prompt: Prompt, mode: str, system: str, user: str, width: int,
         fixed: int | None) -> Ideas:
    if fixed is None:
        system = f"{system}\n{prompt.render(f'{mode}.dynamic')}"
    raw, cost = call_model(model, [SystemMessage(system), HumanMessage(user)])
    items = parse_numbered(raw, width)
    if not items:
        cost["parse_failures"] = 1
    return Ideas(items=items, raw=raw, cost=cost, parsed=bool(items))


def strategies(model: BaseChatModel, prompt: Prompt, problem: Problem, *, width: int = 10,
               fixed: int | None = None) -> Ideas:
    """Strategies for the problem: the model decides how many (capped at ``width``), or exactly ``fixed``."""
    k = str(fixed) if fixed is not None else DYNAMIC["strategy"]
    system = prompt.render(f"strategy.system.{problem['kind']}", k=k)
    user = prompt.render("strategy.user", problem=problem["prompt"])
    return _ask(model, prompt, "strategy", system, user, width, fixed)


def reflections(model: BaseChatModel, prompt: Prompt, problem: Problem, *, strategy: str, code: str,
                feedback: str, width: int = 10, fixed: int | None = None) -> Ideas:
    """Reflections on a node's code and feedback, each a complete fix plan."""
    k = str(fixed) if fixed is not None else DYNAMIC["reflection"]
    system = prompt.render("reflection.system", k=k)
    user = prompt.render("reflection.user", problem=problem["prompt"], strategy=strategy, code=code,
                         feedback=feedback)
    return _ask(model, prompt, "reflection", system, user, width, fixed)
