"""Verifier (CodePRM): a score in [0, 1] for each thought of a chain, from the code and its feedback.

The prompted LLM verifier is CodePRM's released ``llm_score_thought`` (the paper's Fig. 6 evaluates such
general LLMs as verifiers); ``LLMVerifier`` makes it a ``PRMScorer``, so a trained PRM
(``tools.prm.HTTPScorer``) takes its place wherever a graph verifies. ``verify`` runs either and always
returns one score per thought: an answer that cannot be read (an LLM's, or a PRM reply that is not one number
per thought) scores every thought 0.5 and is counted as a parse failure; which thoughts such an answer flags
for refinement is drawn at random as the released code does (``graphs.codeprm.flawed_thoughts``).
``locate_flawed`` is the released code's default locator (``verify_pos_mode='llm'``): no scores, the model
names the one thought that led to the wrong code.
"""

from __future__ import annotations

import dataclasses
import json
import re

from langchain_core.language_models import BaseChatModel

from codeforest.agents.base import (
    Reply,
    acts_as,
    call_model,
    fault,
    messages,
    record_call,
    render_formatted,
    structured_call,
)
from codeforest.prompts import Prompt
from codeforest.tools.prm import PRMError, PRMReplyError, PRMScorer

UNREAD_SCORE = 0.5


EXAMPLE_SCORES = {'"1-Thought": 0.3': '"1-Thought": <score of thought 1>',
                  '"2-Thought": 0.8': '"2-Thought": <score of thought 2>',
                  '"3-Thought": 1.0': '"3-Thought": <score of thought 3>'}
EXAMPLE_MARK = "Example Answer:"


def with_example(prompt: Prompt, example: str) -> Prompt:
    """The Verifier prompt with its example answer as released, with placeholder scores, or without it ('none')."""
    if example == "released":
        return prompt

    def swap(node):
        if isinstance(node, dict):
            return {key: swap(value) for key, value in node.items()}
        if not isinstance(node, str):
            return node
        if example == "placeholders":
            for score, placeholder in EXAMPLE_SCORES.items():
                node = node.replace(score, placeholder)
        elif EXAMPLE_MARK in node:
            node = node[:node.index(EXAMPLE_MARK)].rstrip()
        return node

    return dataclasses.replace(prompt, templates=swap(prompt.templates))


def numbered(thoughts: list[str]) -> str:
    """The thoughts as the verifier and the refine prompt show them: one ``i-Thought: ...`` line each."""
    return "".join(f"\n{i}-Thought: {t.strip()}" for i, t in enumerate(thoughts, 1))


def thoughts_state(problem: str, thoughts: list[str]) -> str:
    """The problem and its numbered thoughts under "Thoughts:", as the released MCTS refine prompt shows them."""
    return f"{problem}\nThoughts:\n{numbered(thoughts)}"


def parse_scores(text: str, count: int) -> list[float] | None:
    """The released code's reading: the JSON dict's values in order, else every second number; clamped to [0, 1].

    More scores than thoughts are cut; fewer (or none) is unreadable (``None``).
    """
    body = text.split("```json")[1].split("```")[0] if "```json" in text else text
    try:
        loaded = json.loads(re.sub(r",\s*}", "}", body.strip()))  # a trailing comma, as in the prompt's example
        scores = [float(v) for v in loaded.values()]  # not a dict: the number reading, as released
    except (json.JSONDecodeError, TypeError, ValueError, AttributeError):
        numbers = [float(m) for m in re.findall(r"-?\d+\.?\d*", body)]
        scores = numbers[1::2]  # "1-Thought": 0.3 -> 1, 0.3
    if len(scores) < count or count == 0:
        return None
    return [min(1.0, max(0.0, s)) for s in scores[:count]]


def parse_location(text: str, count: int, released: bool = False) -> int | None:
    """The 0-based thought a locator reply names: its ``"problematic id"``, else its first number; ``released``:
    the first number anywhere, as the released code reads it (``-?\\d+\\.?\\d*``, cut to an integer). ``None``
    when that is not one of the ``count`` thoughts."""
    if released:
        first = re.search(r"-?\d+\.?\d*", text)
        position = int(float(first.group())) - 1 if first else -1
    else:
        named = re.search(r'problematic id"?\s*:\s*(\d+)', text, flags=re.I) or re.search(r"(\d+)", text)
        position = int(named.group(1)) - 1 if named else -1
    return position if 0 <= position < count else None


@acts_as("locator")
def locate_flawed(model: BaseChatModel, prompt: Prompt, *, state: str, code: str, feedback: str,
                  count: int, released: bool = False) -> Reply[int]:
    """The thought (0-based) the model names as the flawed one; an unreadable or out-of-range answer is the
    last thought, as released, and is counted as a parse failure."""
    raw, cost = call_model(model, messages(prompt.render("system"),
                                           prompt.render("locate", state=state, code=code, feedback=feedback)))
    position = parse_location(raw, count, released)
    if position is None:
        return Reply(count - 1, raw, cost, parsed=False)
    return Reply(position, raw, cost)


@acts_as("verifier")
def score_thoughts(model: BaseChatModel, prompt: Prompt, problem: str, thoughts: list[str], code: str | None,
                   feedback: str | None, *, structured: bool = False) -> Reply[list[float]]:
    """The LLM's score of each thought; ``code`` None: the math-style input (problem and thoughts only)."""
    state = problem + numbered(thoughts)
    if code is None:
        user, structured = render_formatted(prompt, "thoughts", "scores_format", structured, state=state)
    else:
        user, structured = render_formatted(prompt, "execution", "scores_format", structured, state=state,
                                            code=code, feedback=feedback or "")
    keys = [f"{i}-Thought" for i in range(1, len(thoughts) + 1)]
    # the prompt's own format, a dict of "i-Thought" scores, is the schema (its fence left out): they agree
    schema = {"title": "StepScores", "description": "One correctness score in [0, 1] per thought.",
              "type": "object", "properties": {k: {"type": "number"} for k in keys}, "required": keys,
              "additionalProperties": False}
    parsed, raw, cost = structured_call(model, messages(prompt.render("system"), user), schema, enabled=structured)
    scores = None
    if parsed and all(k in parsed for k in keys):
        try:
            scores = [min(1.0, max(0.0, float(parsed[k]))) for k in keys]
        except (TypeError, ValueError):
            scores = None
    if scores is None:
        scores = parse_scores(raw, len(thoughts))
    if scores is None:
        return Reply([UNREAD_SCORE] * len(thoughts), raw, cost, parsed=False)
    return Reply(scores, raw, cost)


class LLMVerifier:
    """The prompted LLM verifier as a ``PRMScorer``."""

    def __init__(self, model: BaseChatModel, prompt: Prompt, *, with_execution: bool = True,
                 structured: bool = False):
        self.model, self.prompt, self.with_execution, self.structured = model, prompt, with_execution, structured

    def judge(self, problem: str, thoughts: list[str], code: str, feedback: str) -> Reply[list[float]]:
        """The scores with the call's cost."""
        return score_thoughts(self.model, self.prompt, problem, thoughts, code if self.with_execution else None,
                              feedback, structured=self.structured)

    def score(self, problem: str, thoughts: list[str], code: str, feedback: str) -> list[float]:
        """One score per thought."""
        return self.judge(problem, thoughts, code, feedback).value


def verify(scorer: PRMScorer, problem: str, thoughts: list[str], code: str, feedback: str) -> Reply[list[float]]:
    """Any scorer's scores as a reply: its cost (an LLM's tokens, or one ``prm_calls``), 0.5 each when unusable.

    A PRM endpoint that fails for good raises ``ModelFault``, which ends the search like a failed model call; one
    that answers something other than a score per thought is an unreadable reply.
    """
    if not thoughts:
        return Reply([], "", {})
    judge = getattr(scorer, "judge", None)
    if callable(judge):
        return judge(problem, thoughts, code, feedback)
    cost = record_call({"prm_calls": 1})
    try:
        scores = list(scorer.score(problem, thoughts, code, feedback))
    except PRMReplyError as exc:
        return Reply([UNREAD_SCORE] * len(thoughts), str(exc), cost, parsed=False)
    except PRMError as exc:
        raise fault(f"verifier: {exc}") from exc
    if len(scores) != len(thoughts):
        return Reply([UNREAD_SCORE] * len(thoughts), json.dumps(scores), cost, parsed=False)
    return Reply([min(1.0, max(0.0, float(s))) for s in scores], json.dumps(scores), cost)
