"""Direct baseline: one Solver call, run on the public tests, no search.

    START -> solve -> evaluate -> finalize -> END
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from codeforest.agents import solver
from codeforest.agents.base import emit, prompt_for, resolve_model
from codeforest.context import Context
from codeforest.graphs.common import context_of, execute_node
from codeforest.graphs.state import SearchInput, SearchOutput, SearchState, finish

ROOT = "n1"
BUDGET_UNIT = "programs"


def budget(context: Context) -> int:
    """The baseline's budget in its unit: one program."""
    return 1


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "direct"):
    """Compile the direct baseline; ``model`` overrides the context's model (library use, tests)."""

    def solve(state: SearchState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        problem = state["problem"]
        emit("solving", node=ROOT)
        reply = solver.write_code(resolve_model(context, model), prompt_for(context, "solver"), problem)
        node = {"id": ROOT, "parent": None, "depth": 1, "kind": "code", "code": reply.code, "status": "open",
                "order": 0}
        emit("node_created", node=ROOT, parent=None, kind="code")
        return {"nodes": {ROOT: node}, "cost": {**reply.cost, "programs": 1}}

    def evaluate(state: SearchState, runtime: Runtime[Context]) -> dict:
        return execute_node(state, context_of(runtime), ROOT)

    def finalize(state: SearchState) -> dict:
        nodes = state["nodes"]
        reason = "passed_public_tests" if nodes[ROOT]["execution"]["pass_rate"] >= 1.0 else "budget_exhausted"
        emit("finished", node=ROOT, stop_reason=reason)
        return finish(nodes, ROOT, reason)

    builder = StateGraph(SearchState, context_schema=Context, input_schema=SearchInput, output_schema=SearchOutput)
    builder.add_node("solve", solve)
    builder.add_node("evaluate", evaluate)
    builder.add_node("finalize", finalize)
    builder.add_edge(START, "solve")
    builder.add_edge("solve", "evaluate")
    builder.add_edge("evaluate", "finalize")
    builder.add_edge("finalize", END)
    return builder.compile(checkpointer=checkpointer, name=name).with_config(recursion_limit=100)


graph = build_graph()
