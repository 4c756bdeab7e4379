"""Reflexion (Shinn et al., 2023) as the baseline the papers compare with: BESTER with one reflection per round.

    the BESTER graph, with k = 1: program -> public tests -> reflection -> repair -> ... (19 rounds)

Reflexion's loop (generate, test, reflect in words, regenerate from the last attempt and the reflection) is
BESTER's loop at k = 1: each round has one reflection and one repair of the program it reflects on, so
"select the best repair" keeps the only one. The repair is Reflexion's own multi-turn chat, which shows the
test results beside the reflection (as CodeTree's released Reflexion baseline; BESTER's repair shows the
reflection alone). The budget is CodeTree's 20 programs (one initial, 19 repairs); the reflection is greedy
like every other call, and the last attempt is returned when none passes, as Reflexion does. Every
``bester_*`` setting still applies.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph
from pydantic import Field

from codeforest.graphs import bester
from codeforest.graphs.bester import BesterContext

roles = bester.roles
BUDGET_UNIT = "programs"
STATE, FRESH = bester.STATE, bester.FRESH


class ReflexionContext(BesterContext):
    """BESTER's settings with Reflexion's values: k = 1, 19 rounds, greedy reflections, the last attempt."""

    bester_width: int = Field(default=1, ge=1, description="Reflections (and repairs) per round: Reflexion's 1.")
    bester_depth: int = Field(default=19, ge=1, description=(
        "Rounds of reflect -> repair: 19, so 20 programs in all (CodeTree's budget for Reflexion)."))
    bester_reflection_temperature: float = Field(default=0.0, ge=0, le=2, description=(
        "Reflection temperature: greedy, like the other calls."))
    bester_final: Literal["auto", "best", "last_round"] = Field(default="last_round", description=(
        "Program returned when none passes: 'last_round' (Reflexion's last attempt), 'best' or 'auto'."))
    bester_repair: Literal["bester", "reflexion"] = Field(default="reflexion", description=(
        "How a repair is asked: 'reflexion' (Reflexion's chat: the program, its test results, the reflection) "
        "or 'bester' (BESTER's, without the test results)."))


CONTEXT = ReflexionContext


def budget(context: ReflexionContext) -> int:
    """Reflexion's budget in its unit: programs (the initial one and one per round)."""
    return 1 + context.bester_depth * context.bester_width


def recursion_limit(context: ReflexionContext) -> int:
    """BESTER's count for these settings."""
    return bester.recursion_limit(context)


def graph_builder(model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled Reflexion graph (BESTER's, with Reflexion's defaults)."""
    return bester.graph_builder(model, ReflexionContext)


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "reflexion"):
    """Compile Reflexion; ``model`` overrides the context's model (library use, tests)."""
    return graph_builder(model).compile(checkpointer=checkpointer, name=name)


graph = build_graph()
