"""codeforest: LangGraph tree-search code-generation agents."""

from importlib import import_module

# Loaded on first use (PEP 562), so ``import codeforest.<module>`` and the command line do not pay for LangGraph,
# the graphs and the model clients before they need them.
_EXPORTS = {
    "solve": "codeforest.api",
    "as_chat_graph": "codeforest.chat",
    "as_solver_tool": "codeforest.chat",
    "problem_from_text": "codeforest.chat",
    "Context": "codeforest.context",
    "Problem": "codeforest.problems",
    "Task": "codeforest.problems",
    "load_dataset": "codeforest.loading",
    "load_problem": "codeforest.loading",
    "build_graph": "codeforest.registry",
    "context_for": "codeforest.registry",
    "graph_names": "codeforest.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """The public API, imported when first named."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'codeforest' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
