"""Judge: which of two outputs on one input is right (S*'s pairwise selection).

The model sees the problem, the input and the two outputs, never the programs. The answer is read from a
last ``Answer: A`` / ``Answer: B``; anything else is a parse failure and the comparison abstains.
"""

from __future__ import annotations

import re

from langchain_core.language_models import BaseChatModel

from codeforest.agents.base import Reply, acts_as, call_model, messages
from codeforest.problems import Problem
from codeforest.prompts import Prompt

_ANSWER = re.compile(r"answer\s*[:：]?\s*\**\s*(?:output\s+)?([AB])\b", re.I)


def parse_choice(text: str) -> str | None:
    """``"first"`` for A, ``"second"`` for B: the last ``Answer: X`` in the text; ``None`` when there is none."""
    found = _ANSWER.findall(text)
    return {"A": "first", "B": "second"}[found[-1].upper()] if found else None


@acts_as("judge")
def compare_outputs(model: BaseChatModel, prompt: Prompt, problem: Problem, *, given: str, first: str,
                    second: str) -> Reply[str | None]:
    """Which output (shown first or second) the model holds right for ``given``; ``None`` when unreadable."""
    user = prompt.render("compare", problem=problem["prompt"], input=given, first=first, second=second)
    raw, cost = call_model(model, messages(prompt.render("system"), user))
    choice = parse_choice(raw)
    return Reply(choice, raw, cost, parsed=choice is not None)
