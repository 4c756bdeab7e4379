"""What a search spends: model calls, tokens, programs and sandbox runs, as one plain record that adds up."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from typing_extensions import TypedDict


class Cost(TypedDict, total=False):
    """Budget counters; summed across nodes by ``add_cost``."""

    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    programs: int
    sandbox_runs: int
    parse_failures: int
    cached_calls: int  # model calls answered from the response cache (no endpoint request)
    prm_calls: int  # calls to a PRM endpoint (a trained verifier; an LLM verifier's calls are llm_calls)


COST_KEYS = ("llm_calls", "prompt_tokens", "completion_tokens", "programs", "sandbox_runs", "parse_failures",
             "cached_calls", "prm_calls")


def add_cost(left: Cost | None, right: Cost | None) -> Cost:
    """Sum two cost records key by key."""
    left, right = left or {}, right or {}
    return {k: left.get(k, 0) + right.get(k, 0) for k in COST_KEYS}


def tokens_spent(cost: Cost | dict | None) -> int:
    """Prompt plus completion tokens of a cost record: the unit of ``token_budget`` and of every report."""
    cost = cost or {}
    return cost.get("prompt_tokens", 0) + cost.get("completion_tokens", 0)


def total_cost(costs: Iterable[Cost | None]) -> Cost:
    """The sum of several cost records."""
    return functools.reduce(add_cost, costs, {})
