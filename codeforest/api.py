"""The public Python API: ``solve()`` a problem with a named graph."""

from __future__ import annotations

import time
from collections.abc import Callable

from langchain_core.language_models import BaseChatModel

from codeforest.context import Context
from codeforest.graphs.state import add_cost
from codeforest.problems import Problem
from codeforest.registry import build_graph


def solve(problem: Problem, graph: str = "direct", *, context: Context | None = None,
          model: BaseChatModel | None = None, on_event: Callable[[dict], None] | None = None,
          checkpointer=None, thread_id: str | None = None) -> dict:
    """Run one graph on one problem; return the common output plus ``cost.wall_s``.

    ``on_event`` receives the graph's progress events (node created, executed, verdicts ...).
    """
    context = context or Context()
    compiled = build_graph(graph, checkpointer=checkpointer, model=model)
    started = time.monotonic()
    final: dict = {}
    config: dict = {}  # each graph is compiled with a recursion limit above its own budget
    if checkpointer is not None:
        config["configurable"] = {"thread_id": thread_id or problem["id"]}
    for mode, chunk in compiled.stream({"problem": problem}, context=context, stream_mode=["custom", "values"],
                                       config=config):
        if mode == "custom" and on_event is not None:
            on_event(chunk)
        elif mode == "values":
            final = chunk
    output = {k: final.get(k) for k in ("final_code", "final_node", "stop_reason", "public_pass_rate", "nodes")}
    output["cost"] = {**add_cost(final.get("cost"), None), "wall_s": round(time.monotonic() - started, 3)}
    return output
