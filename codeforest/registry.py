"""The graph registry: every search method by name, imported on demand."""

from __future__ import annotations

import importlib
from types import ModuleType

from codeforest.context import Context

GRAPHS = {
    "direct": "codeforest.graphs.direct",
    "codetree": "codeforest.graphs.codetree",
    "rethink_mcts": "codeforest.graphs.rethink_mcts",
    "bester": "codeforest.graphs.bester",
    "rpm_mcts": "codeforest.graphs.rpm_mcts",
    "gvr": "codeforest.graphs.gvr",
    "gvr_bon": "codeforest.graphs.gvr_bon",
    "resample": "codeforest.graphs.resample",
    "reflexion": "codeforest.graphs.reflexion",
}


def graph_names() -> list[str]:
    """Names of all registered graphs."""
    return list(GRAPHS)


def graph_module(name: str) -> ModuleType:
    """The module of a registered graph (its ``graph``, ``build_graph``, ``CONTEXT``, ``budget`` ...)."""
    if name not in GRAPHS:
        raise ValueError(f"Unknown graph {name!r}; choose one of {', '.join(GRAPHS)}")
    return importlib.import_module(GRAPHS[name])


def build_graph(name: str, **kwargs):
    """Compile the named graph; keyword arguments go to its module's ``build_graph``."""
    return graph_module(name).build_graph(**kwargs)


def context_for(name: str, context: object = None, **overrides) -> Context:
    """The graph's own context class, built from any context, dict or ``None`` (the fields it has)."""
    return graph_module(name).CONTEXT.of(context, **overrides)


def graph_budget(name: str, context: object = None) -> dict:
    """The graph's budget in its paper's unit, e.g. ``{"unit": "programs", "limit": 20}``."""
    module = graph_module(name)
    return {"unit": module.BUDGET_UNIT, "limit": module.budget(context_for(name, context))}


def recursion_limit(name: str, context: object = None) -> int:
    """The recursion limit the graph's budget needs under this context."""
    return graph_module(name).recursion_limit(context_for(name, context))
