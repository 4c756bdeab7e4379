"""CodePRM's verification rules (Generate-Verify-Refine): the thought scorer, which thoughts a score flags for
refinement, how a refinement replaces a thought, and one number for a chain's scores. Shared by the graphs that
verify thoughts: GVR and GVR-BoN (CodePRM), and CodeTree's and RethinkMCTS's verifier options."""

from __future__ import annotations

import random

from langchain_core.language_models import BaseChatModel

from codeforest.agents.base import Reply
from codeforest.agents.verifier import LLMVerifier, locate_flawed, verify, with_example
from codeforest.context import VerifierContext
from codeforest.graphs.kit import chat_model, prompt
from codeforest.tools.prm import HTTPScorer


def verifier(context: VerifierContext, model: BaseChatModel | None = None):
    """The run's thought scorer (a ``tools.prm.PRMScorer``): the prompted chat model (the search's ``model``; its
    calls go to the verifier role's own model where the run names one) or the PRM endpoint."""
    with_execution = context.verifier_input == "execution"
    if context.verifier == "http":
        return HTTPScorer(context.verifier_url, timeout=context.request_timeout, retries=context.retries,
                          with_execution=with_execution)
    return LLMVerifier(chat_model(context, model),
                       with_example(prompt(context, "verifier"), context.verifier_example),
                       with_execution=with_execution, structured=context.structured_output)


def roles(context: VerifierContext, max_refines: int, verify_mode: str) -> set[str]:
    """The roles a Generate-Verify-Refine search calls (GVR, GVR-BoN), the selector's aside: the LLM verifier (a
    problem without public tests is always scored), Refine where thoughts are refined, and the locator there under
    ``llm_locate``."""
    called = {"thinker", "solver"} | ({"rethink"} if max_refines >= 1 else set())
    if context.verifier == "llm":
        called.add("verifier")
    if max_refines >= 1 and verify_mode == "llm_locate":
        called.add("locator")
    return called


def flag_thoughts(scores: list[float], mode: str, threshold: float, rule: str = "le",
                  unflagged: str = "none") -> list[int]:
    """The thoughts to refine (0-based): every score at or below θ (``rule`` 'le' ≤, 'lt' <), and when none is,
    nothing (``unflagged`` 'none') or the lowest ('lowest'); or only the lowest (``mode`` 'locate_min'). Ties for
    the lowest go to the earliest thought."""
    if not scores:
        return []
    lowest = [scores.index(min(scores))]
    if mode == "locate_min":
        return lowest
    return below(scores, threshold, rule) or (lowest if unflagged == "lowest" else [])


def flawed_thoughts(mode: str, context: VerifierContext, llm: BaseChatModel, problem: str, thoughts: list[str],
                    code: str, feedback: str, *, shown: str, key: str, scores: list[float] | None = None,
                    unread: bool = False) -> tuple[list[int], list[float] | None, dict]:
    """The thoughts (0-based) to refine under ``mode``, the step scores behind them (None without) and the cost.

    'threshold' and 'locate_min' flag from the Verifier's scores (``scores`` when already computed for this
    code, ``unread`` when that reply could not be read); the released code's score-free locators: 'llm_locate'
    (the model names one thought, from ``shown``: problem and numbered thoughts), 'last', and 'random' (drawn
    from ``key``, so a rerun draws the same). An unreadable Verifier reply is recorded as 0.5 per thought, and
    the thoughts are flagged from scores drawn at random as the released code does (from ``key``): 0.5
    everywhere would flag every thought under 'le', and under 'lt' none (always the first with the released
    ``unflagged`` 'lowest').
    """
    if not thoughts:
        return [], scores, {}
    if mode == "last":
        return [len(thoughts) - 1], None, {}
    if mode == "random":
        return [random.Random(key).randrange(len(thoughts))], None, {}
    if mode == "llm_locate":
        reply = locate_flawed(llm, prompt(context, "verifier"), state=shown, code=code, feedback=feedback,
                              count=len(thoughts), released=getattr(context, "released_text", False))
        return [reply.value], None, reply.cost
    cost: dict = {}
    if scores is None:
        scored = verify(verifier(context, llm), problem, thoughts, code, feedback)
        scores, cost, unread = scored.value, scored.cost, not scored.parsed
    drawn = random.Random(key)
    flag_by = [drawn.random() for _ in thoughts] if unread else scores
    flagged = flag_thoughts(flag_by, mode, context.verifier_threshold, context.verifier_threshold_rule,
                            context.verifier_unflagged)
    return flagged, scores, cost


def valued_scores(scored: Reply, context: VerifierContext, key: str) -> list[float]:
    """The step scores that value a program: the Verifier's, or for a reply that could not be read (0.5 each) the
    ``verifier_unread`` rule: 0.5 each ('half'), or uniform draws seeded by ``key`` ('random', the released
    code)."""
    if scored.parsed or context.verifier_unread == "half":
        return scored.value
    drawn = random.Random(key)
    return [drawn.random() for _ in scored.value]


def below(scores: list[float], threshold: float, rule: str = "le") -> list[int]:
    """The positions of the flagged scores: ``rule`` 'le' is ≤ θ (the CodePRM paper), 'lt' < θ (its released code)."""
    return [i for i, s in enumerate(scores) if (s <= threshold if rule == "le" else s < threshold)]


def refined_thought(node: dict, text: str, raw: str | None = None) -> dict | None:
    """A thought node's update when a refinement replaces its text (the first text kept); ``None`` for an empty
    replacement, which would drop the thought out of every prompt and renumber the others, so the thought stays.
    ``raw`` (released_text): the refine reply as written becomes the state's text, as the released code keeps it
    (``\\nThought: `` put before a reply without ``Thought:``), even when empty."""
    if raw is not None:
        action = raw if "Thought:" in raw else f"\nThought: {raw}"
        return {"text": text or node["text"], "action": action, "refined": node.get("refined", 0) + 1,
                "replaced_thought": node.get("replaced_thought", node["text"])}
    if not text:
        return None
    return {"text": text, "refined": node.get("refined", 0) + 1,
            "replaced_thought": node.get("replaced_thought", node["text"])}


def aggregate(scores: list[float], how: str) -> float:
    """One number for a chain's step scores: 'max' (the released code's default), 'min', 'mean' or 'last'."""
    if not scores:
        return 0.0
    return {"max": max, "min": min, "mean": lambda s: sum(s) / len(s), "last": lambda s: s[-1]}[how](scores)
