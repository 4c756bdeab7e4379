"""What a search spends: model calls, tokens, programs and sandbox runs, as one plain record that adds up; the
calls and tokens of each model (``models``), and their price."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

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
    models: dict[str, dict[str, int]]  # per model name: llm_calls, prompt_tokens, completion_tokens
    replayed_s: float  # what the calls answered from the response cache took when they were made


COST_KEYS = ("llm_calls", "prompt_tokens", "completion_tokens", "programs", "sandbox_runs", "parse_failures",
             "cached_calls", "prm_calls")
MODEL_KEYS = ("llm_calls", "prompt_tokens", "completion_tokens")
# The embedded models' default price (per million tokens, input and output alike): their parameter count in
# billions, so a 1.5B model's tokens cost three times a 0.5B model's unless the user sets prices.
# a size in a model's name: '1.5b', '70B', a mixture's '8x7b'; an MoE's active part ('A3B') follows its total
_PARAMETERS = re.compile(r"(?<![\d.])(?:(\d+)x)?(\d+(?:\.\d+)?)b(?![a-z])", re.IGNORECASE)


def add_cost(left: Cost | None, right: Cost | None) -> Cost:
    """Sum two cost records key by key (and model by model; ``replayed_s`` only where a cache hit had some)."""
    left, right = left or {}, right or {}
    total: Cost = {k: left.get(k, 0) + right.get(k, 0) for k in COST_KEYS}
    replayed = left.get("replayed_s", 0.0) + right.get("replayed_s", 0.0)
    if replayed:
        total["replayed_s"] = replayed
    models = {**left.get("models", {})}
    for name, counts in right.get("models", {}).items():
        mine = models.get(name, {})
        models[name] = {k: mine.get(k, 0) + counts.get(k, 0) for k in MODEL_KEYS}
    if models:
        total["models"] = models
    return total


def tokens_spent(cost: Cost | dict | None) -> int:
    """Prompt plus completion tokens of a cost record: the unit of ``token_budget`` and of every report."""
    cost = cost or {}
    return cost.get("prompt_tokens", 0) + cost.get("completion_tokens", 0)


def total_cost(costs: Iterable[Cost | None]) -> Cost:
    """The sum of several cost records."""
    return functools.reduce(add_cost, costs, {})


def default_price(model: str) -> tuple[float, float] | None:
    """An embedded-style model's default price per million tokens (input, output): its parameter count in billions
    as its file name states it first ('qwen2.5-coder-1.5b-instruct-q4_k_m' -> 1.5; a mixture's total:
    'Qwen3-30B-A3B' -> 30, 'mixtral-8x7b' -> 56); None when the name states none."""
    found = _PARAMETERS.search(model.rsplit("/", 1)[-1])
    if found is None:
        return None
    experts, size = found.groups()
    return (float(size) * int(experts or 1),) * 2


def price_of(model: str, prices: Mapping[str, Iterable[float]]) -> tuple[float, float] | None:
    """A model's price per million tokens (input, output): the table's, else the default (``default_price``)."""
    if model in prices:
        given = tuple(float(p) for p in prices[model])
        return (given[0], given[-1])
    return default_price(model)


def money_spent(cost: Cost | dict | None, prices: Mapping[str, Iterable[float]]) -> float | None:
    """What a cost record's tokens cost, in the price table's unit (None when a model in it has no price, or the
    record counts tokens without saying whose)."""
    cost = cost or {}
    if tokens_spent(cost) and not cost.get("models"):
        return None
    total = 0.0
    for name, counts in cost.get("models", {}).items():
        price = price_of(name, prices)
        if price is None:
            return None
        total += (counts.get("prompt_tokens", 0) * price[0] + counts.get("completion_tokens", 0) * price[1]) / 1e6
    return total


def per_model_text(cost: Cost | dict | None, prices: Mapping[str, Iterable[float]]) -> str:
    """Each model's calls and tokens, and what they cost, as one line for a person ('' when no model is named)."""
    models = (cost or {}).get("models") or {}
    if not models:
        return ""
    parts = [f"{name}: {c.get('llm_calls', 0)} calls, {c.get('prompt_tokens', 0)}+{c.get('completion_tokens', 0)} "
             f"tokens" for name, c in models.items()]
    spent = money_spent(cost, prices)
    priced = f"; cost {spent:.6g} in the price table's unit" if spent is not None else "; cost unknown (no price)"
    return "; ".join(parts) + priced
