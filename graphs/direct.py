"""Direct baseline: one Solver call, run on the public tests, no search.

    START -> start -> solve -> evaluate -> finalize -> END
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime

from codeforest.agents import solver
from codeforest.context import Context
from codeforest.graphs import kit, selection
from codeforest.graphs.state import SearchState

BUDGET_UNIT = "programs"
CONTEXT = Context  # the baseline has no settings of its own
STATE = SearchState
FRESH: dict = {}  # no state beyond the common one


def roles(context: Context) -> set[str]:
    """The roles this graph calls: the Solver (one program: the selector has nothing to choose)."""
    return {"solver"}


def budget(context: Context) -> int:
    """The baseline's budget in its unit: one program."""
    return 1


def recursion_limit(context: Context) -> int:
    """Steps of the longest run: start, solve, evaluate, finalize."""
    return kit.recursion_limit(4)


def solve(state: SearchState, runtime: Runtime[Context], model: BaseChatModel | None = None) -> dict:
    """One Solver call: the program of the only node."""
    context = kit.settings(runtime, CONTEXT)
    kit.emit("solving", node="n1")
    reply = solver.write_code(kit.chat_model(context, model), kit.prompt(context, "solver"), state["problem"])
    node = kit.new_node(kit.next_order(state["nodes"]), parent=None, kind="code", code=reply.value)
    return {"nodes": {node["id"]: node}, "cost": {**reply.cost, "programs": 1}}


def evaluate(state: SearchState, runtime: Runtime[Context]) -> dict:
    """Run the program on the public tests."""
    node = next(iter(state["nodes"].values()))
    result, tested = kit.run_program(state["problem"], node["code"], kit.settings(runtime, CONTEXT), node["id"])
    return {"nodes": {node["id"]: {**tested, "value": result.pass_rate}}, "cost": {"sandbox_runs": 1}}


def finalize(state: SearchState) -> dict:
    """Return the program, which passed the public tests or spent the budget."""
    if not state["nodes"]:  # the model call failed for good
        return kit.finish(state, None, "", None, "model_error")
    node = next(iter(state["nodes"].values()))
    reason = "passed_public_tests" if kit.passes_public(node["execution"]) else "budget_exhausted"
    return kit.finish_node(state, node["id"], reason)


def graph_builder(model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled direct graph; ``model`` replaces the context's model."""
    builder = kit.builder(STATE, CONTEXT)
    kit.add_nodes(builder, {"start": kit.starter(FRESH, recursion_limit, CONTEXT, roles), "solve": solve,
                            "evaluate": evaluate, "finalize": finalize}, model)
    builder.add_edge(START, "start")
    builder.add_edge("start", "solve")
    builder.add_edge("solve", "evaluate")
    builder.add_edge("evaluate", "finalize")
    selection.add_selection(builder, model)
    return builder


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "direct"):
    """Compile the direct baseline; ``model`` overrides the context's model (library use, tests)."""
    return graph_builder(model).compile(checkpointer=checkpointer, name=name)


graph = build_graph()
