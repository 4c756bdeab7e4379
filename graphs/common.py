"""Node helpers every graph shares: reading the context, running a node's code on the public tests."""

from __future__ import annotations

from dataclasses import fields

from langgraph.runtime import Runtime

from codeforest.agents.base import emit
from codeforest.context import Context
from codeforest.graphs.state import SearchState
from codeforest.problems import Problem
from codeforest.tools.sandbox import run_public_tests
from codeforest.tools.testing import ExecutionResult, feedback_text


def context_of(runtime: Runtime | None) -> Context:
    """The run's Context, whether it came as a dataclass, a dict (server) or not at all."""
    raw = getattr(runtime, "context", None)
    if isinstance(raw, Context):
        return raw
    if isinstance(raw, dict):
        known = {f.name for f in fields(Context)}
        return Context(**{k: v for k, v in raw.items() if k in known})
    return Context()


def run_node_tests(problem: Problem, code: str, context: Context, node_id: str) -> tuple[ExecutionResult, dict]:
    """Run a node's program on the public tests; the result and the node fields it sets."""
    result = run_public_tests(problem, code, timeout=context.test_timeout, backend=context.sandbox)
    emit("executed", node=node_id, passed=result.passed, total=result.total)
    return result, {"execution": result.summary(), "feedback": feedback_text(result),
                    "status": "passed" if result.all_passed else "failed"}


def execute_node(state: SearchState, context: Context, node_id: str) -> dict:
    """Run one node's program on the public tests; store the summary, feedback and value on the node."""
    result, update = run_node_tests(state["problem"], state["nodes"][node_id]["code"], context, node_id)
    return {"nodes": {node_id: {**update, "value": result.pass_rate}}, "cost": {"sandbox_runs": 1}}
