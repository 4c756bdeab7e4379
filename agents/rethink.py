"""Rethink (RethinkMCTS): rewrite the current leaf thought from the verbal feedback, keeping its place in the tree."""

from __future__ import annotations

import re

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from codeforest.agents.base import Reply, call_model
from codeforest.problems import Problem
from codeforest.prompts import Prompt


def rethink(model: BaseChatModel, prompt: Prompt, problem: Problem, *, thoughts: str, code: str,
            feedback: str) -> Reply[str]:
    """A replacement thought (one or two sentences, no code); an empty answer keeps the reply as it is."""
    user = prompt.render("user", problem=problem["prompt"], thoughts=thoughts, code=code, feedback=feedback)
    raw, cost = call_model(model, [HumanMessage(user)])
    text = re.sub(r"```.*?(```|\Z)", "", raw, flags=re.DOTALL).strip()  # a thought, not code
    text = re.sub(r"^(new\s+)?thought\s*(-?\d+)?\s*:\s*", "", text, flags=re.IGNORECASE).strip()
    return Reply(text or raw.strip(), raw, cost)
