"""The public Python API: ``solve()`` a problem with a named graph."""

from __future__ import annotations

import time
from collections.abc import Callable

from langchain_core.language_models import BaseChatModel

from codeforest.cost import add_cost
from codeforest.graphs.state import OUTPUT_KEYS
from codeforest.problems import Problem
from codeforest.registry import build_graph, context_for, graph_module, recursion_limit


def run_config(graph: str, context) -> dict:
    """The run's config: the recursion limit its budget needs and room for its parallel branches."""
    config: dict = {"recursion_limit": recursion_limit(graph, context)}
    if context.slots_needed() > 1:  # LangGraph's sync executor runs min(32, cpus + 4) branches unless told;
        # its max_concurrency counts one task beyond the branches (measured: 5 let only 4 Send branches run)
        config["max_concurrency"] = context.slots_needed() + 1
    return config


def solve(problem: Problem, graph: str = "direct", *, context: object = None,
          model: BaseChatModel | None = None, on_event: Callable[[dict], None] | None = None,
          checkpointer=None, thread_id: str | None = None) -> dict:
    """Run one graph on one problem; return the common output plus ``cost.wall_s``.

    ``context`` is any context (the graph takes the fields its own class has) or a dict of the graph's
    settings (an unknown name is an error). ``on_event``
    receives the graph's progress events (node created, executed, verdicts ...). The recursion limit
    is derived from the budget, and parallel branches get as many threads as the context asks for
    (``rethink_concurrency``, ``bester_concurrency``). With a checkpointer, the run is stored on
    ``thread_id`` (default: the problem id); a new run on a used thread starts from a clean tree and cost.
    An exception leaving the graph carries the cost of the steps finished before it as ``cost_before_error``.
    """
    context = context_for(graph, context)
    if checkpointer is None and model is None:  # the module's compiled graph: compiling costs up to 0.15 s a run
        compiled = graph_module(graph).graph
    else:
        compiled = build_graph(graph, checkpointer=checkpointer, model=model)
    config = run_config(graph, context)
    if checkpointer is not None:
        config["configurable"] = {"thread_id": thread_id or problem["id"]}
    started = time.monotonic()
    final: dict = {}
    try:
        for mode, chunk in compiled.stream({"problem": problem}, config, context=context,
                                           stream_mode=["custom", "values"]):
            if mode == "custom" and on_event is not None:
                on_event(chunk)
            elif mode == "values":
                final = chunk
    except Exception as exc:
        # what the finished steps spent, for the caller's record of the failure (the failing step's calls are lost)
        exc.cost_before_error = add_cost(final.get("cost"), None)
        raise
    output = {k: final.get(k) for k in OUTPUT_KEYS}
    output["cost"] = {**add_cost(final.get("cost"), None), "wall_s": round(time.monotonic() - started, 3)}
    return output
