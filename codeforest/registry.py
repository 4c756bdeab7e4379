"""The graph registry: every search method by name, imported on demand."""

from __future__ import annotations

import importlib

GRAPHS = {
    "direct": "codeforest.graphs.direct",
    "codetree": "codeforest.graphs.codetree",
    "rethink_mcts": "codeforest.graphs.rethink_mcts",
    "bester": "codeforest.graphs.bester",
}


def graph_names() -> list[str]:
    """Names of all registered graphs."""
    return list(GRAPHS)


def build_graph(name: str, **kwargs):
    """Compile the named graph; keyword arguments go to its module's ``build_graph``."""
    if name not in GRAPHS:
        raise ValueError(f"Unknown graph {name!r}; choose one of {', '.join(GRAPHS)}")
    return importlib.import_module(GRAPHS[name]).build_graph(**kwargs)


def graph_budget(name: str, context) -> dict:
    """The graph's budget in its paper's unit, e.g. ``{"unit": "programs", "limit": 20}``."""
    module = importlib.import_module(GRAPHS[name])
    return {"unit": module.BUDGET_UNIT, "limit": module.budget(context)}
