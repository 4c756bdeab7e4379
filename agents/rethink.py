"""Rethink: rewrite a thought in place. RethinkMCTS rewrites the failing leaf thought from the verbal feedback;
CodePRM's Refine rewrites a thought the Verifier flagged."""

from __future__ import annotations

import re

from langchain_core.language_models import BaseChatModel

from codeforest.agents.base import Reply, acts_as, call_model, messages, with_system
from codeforest.problems import Problem
from codeforest.prompts import Prompt


@acts_as("rethink")
def rethink(model: BaseChatModel, prompt: Prompt, problem: Problem, *, thoughts: str, code: str,
            feedback: str, key: str = "user") -> Reply[str]:
    """A replacement thought (one or two sentences, no code) from the ``key`` template; an empty answer keeps
    the reply as it is."""
    user = prompt.render(key, problem=problem["prompt"], thoughts=thoughts, code=code, feedback=feedback)
    raw, cost = call_model(model, with_system(prompt, user))
    text = re.sub(r"```.*?(```|\Z)", "", raw, flags=re.DOTALL).strip()  # a thought, not code
    text = re.sub(r"^(new\s+)?thought\s*(-?\d+)?\s*:\s*", "", text, flags=re.IGNORECASE).strip()
    return Reply(text or raw.strip(), raw, cost)


@acts_as("rethink")
def refine(model: BaseChatModel, prompt: Prompt, *, state: str, code: str, feedback: str,
           refine_id: int) -> Reply[str]:
    """CodePRM's Refine: a new thought replacing the ``refine_id``-Thought (1-based) of the numbered ``state``."""
    raw, cost = call_model(model, messages(prompt.render("system"),
                                           prompt.render("refine", state=state, code=code, feedback=feedback,
                                                         refine_id=refine_id)))
    text = re.sub(r"```.*?(```|\Z)", "", raw, flags=re.DOTALL).strip()
    text = re.sub(r"^\**\s*(new\s+)?(\d+\s*-\s*)?thought\s*(-?\d+)?\s*\**\s*:\s*\**", "", text, flags=re.I).strip()
    return Reply(text or raw.strip(), raw, cost, parsed=bool(text))
