"""The graph registry: every search method by name, imported on demand."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the settings model (pydantic) is imported when a graph is built, not to list the names
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


# variables read outside any context: the data folder, the model cache, the llama.cpp settings, the bwrap choice
STANDALONE_ENV = frozenset({"CODEFOREST_DATA", "CODEFOREST_CACHE", "CODEFOREST_LLAMA_SETTINGS", "CODEFOREST_BWRAP",
                            "CODEFOREST_DATA_MIRROR"})


def unknown_env_settings(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The ``CODEFOREST_*`` variables that name no setting of any graph (a misspelt one is otherwise ignored)."""
    from codeforest.context import ENV_PREFIX, Context

    shared = STANDALONE_ENV | {ENV_PREFIX + field.upper() for field in Context.model_fields}
    rest = [name for name in environ if name.startswith(ENV_PREFIX) and name not in shared]
    if not rest:  # the common case needs no graph module imported
        return []
    known = {ENV_PREFIX + field.upper() for graph in GRAPHS for field in graph_module(graph).CONTEXT.model_fields}
    return sorted(name for name in rest if name not in known)


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


def graph_roles(name: str, context: object = None) -> set[str]:
    """The roles the graph calls under this context (the selector's among them)."""
    return graph_module(name).roles(context_for(name, context))


def check_run_roles(graphs: list[str], context: Context) -> None:
    """Refuse a ``roles`` entry that no graph of the run calls under its settings, by name, with the roles they
    call."""
    from codeforest.graphs.kit import check_roles

    check_roles(context, set().union(*(graph_roles(g, context) for g in graphs)))


def run_context(name: str, context: Context) -> Context:
    """The graph's context in a run of several graphs: ``roles`` entries the graph never calls are left out (the
    run checks once, with ``check_run_roles``, that each is called by one of them)."""
    own = context_for(name, context)
    called = graph_roles(name, own)
    return context_for(name, own, roles={r: entry for r, entry in own.roles.items() if r in called})


def graph_budget(name: str, context: object = None) -> dict:
    """The graph's budget in its paper's unit, e.g. ``{"unit": "programs", "limit": 20}``."""
    module = graph_module(name)
    return {"unit": module.BUDGET_UNIT, "limit": module.budget(context_for(name, context))}


def recursion_limit(name: str, context: object = None) -> int:
    """The recursion limit the graph's budget needs under this context."""
    return graph_module(name).recursion_limit(context_for(name, context))
