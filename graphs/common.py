"""Node helpers every graph shares: reading the context, running a node's code on the public tests."""

from __future__ import annotations

from dataclasses import fields

from langgraph.runtime import Runtime

from codeforest.agents.base import emit
from codeforest.context import Context
from codeforest.graphs.state import SearchState
from codeforest.tools.sandbox import run_public_tests
from codeforest.tools.testing import feedback_text


def context_of(runtime: Runtime | None) -> Context:
    """The run's Context, whether it came as a dataclass, a dict (server) or not at all."""
    raw = getattr(runtime, "context", None)
    if isinstance(raw, Context):
        return raw
    if isinstance(raw, dict):
        known = {f.name for f in fields(Context)}
        return Context(**{k: v for k, v in raw.items() if k in known})
    return Context()


def execute_node(state: SearchState, context: Context, node_id: str) -> dict:
    """Run one node's program on the public tests; store the summary and feedback on the node."""
    node = state["nodes"][node_id]
    result = run_public_tests(state["problem"], node["code"], timeout=context.test_timeout,
                              backend=context.sandbox)
    summary = result.summary()
    emit("executed", node=node_id, passed=result.passed, total=result.total)
    update = {"execution": summary, "feedback": feedback_text(result), "value": result.pass_rate,
              "status": "passed" if result.all_passed else "failed"}
    return {"nodes": {node_id: update}, "cost": {"sandbox_runs": 1}}
