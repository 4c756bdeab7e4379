"""Resampling baseline (CodeTree's "Resampling"): sample programs until one passes the public tests.

    START -> start -> sample --(no pass, samples left)--> sample
                            \\--(a pass / budget spent)--> finalize -> END

Each sample is one Solver call at ``resample_temperature`` with its own seed, derived from
``resample_seed`` and its index, so a rerun (and the response cache) reproduces it; it is run on the
public tests at once. The final program is the first that passes every public test, else the one that
passes the most (ties to the earliest). This is the baseline every search method is compared with at
equal tokens. A problem without public tests keeps the first sample (nothing can tell samples apart), unless
another selector is to choose among ``min_candidates`` samples.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from pydantic import Field

from codeforest.agents import solver
from codeforest.context import Context
from codeforest.graphs import kit, selection
from codeforest.graphs.state import NodeRecord, SearchState

BUDGET_UNIT = "programs"
SEED_STRIDE = 100_000  # sample i of run seed s gets seed s * SEED_STRIDE + i + 1


class ResampleContext(Context):
    """Resampling's settings: how many programs, at which temperature, from which seed."""

    resample_n: int = Field(default=20, ge=1, description="Resampling budget: programs (CodeTree's 20).")
    resample_temperature: float = Field(default=1.0, ge=0, le=2, description="Sampling temperature (1.0).")
    resample_seed: int = Field(default=0, ge=0, description=(
        "The run's seed; sample i uses seed * 100000 + i + 1, so a rerun draws the same programs."))


CONTEXT = ResampleContext


class ResampleState(SearchState, total=False):
    """The common state plus why the search is over (None while it goes on)."""

    stop: str | None


STATE = ResampleState
FRESH = {"stop": None}


def roles(context: ResampleContext) -> set[str]:
    """The roles this graph calls under these settings: the Solver, and the selector's with two samples or more."""
    return kit.roles_called(context, {"solver"}, choices=context.resample_n >= 2)


def budget(context: ResampleContext) -> int:
    """Resampling's budget in its unit: programs."""
    return context.resample_n


def recursion_limit(context: ResampleContext) -> int:
    """Steps of the longest run: start, one per sample, finalize."""
    return kit.recursion_limit(2 + context.resample_n)


def sample_seed(context: ResampleContext, index: int) -> int:
    """The seed of sample ``index`` (0-based)."""
    return context.resample_seed * SEED_STRIDE + index + 1


def choose(nodes: dict[str, NodeRecord]) -> NodeRecord | None:
    """The first program passing every public test, else the most tests passed; ties to the earliest (with
    ``min_candidates`` > 1 the selector then chooses among the passing ones)."""
    tried = sorted((n for n in nodes.values() if "execution" in n), key=lambda n: n["order"])
    passing = [n for n in tried if kit.passes_public(n["execution"])]
    if passing:
        return passing[0]
    return kit.best(tried, key=lambda n: n["execution"].get("passed", 0))


def sample(state: ResampleState, runtime: Runtime[ResampleContext], model: BaseChatModel | None = None) -> dict:
    """One sampled program, run on the public tests; the search is over at a pass or when the budget is spent."""
    context = kit.settings(runtime, CONTEXT)
    index = len(state["nodes"])
    llm = kit.chat_model(context, model).bind(temperature=context.resample_temperature,
                                              seed=sample_seed(context, index))
    reply = solver.write_code(llm, kit.prompt(context, "solver"), state["problem"])
    node = kit.new_node(index + 1, parent=None, kind="code", code=reply.value, seed=sample_seed(context, index))
    result, tested = kit.run_program(state["problem"], reply.value, context, node["id"])
    node.update(tested, value=result.pass_rate)
    stop = None
    if kit.passes_public(result) and kit.enough_passing({**state["nodes"], node["id"]: node}, context):
        stop = "passed_public_tests"
    elif index + 1 >= context.resample_n or (not state["problem"].get("public_tests") and (
            context.selector == "public" or index + 1 >= context.min_candidates)):
        stop = "budget_exhausted"
    elif kit.steps_left(state) < 2:  # another sample, finalize
        stop = kit.STEP_LIMIT
    return {"nodes": {node["id"]: node}, "cost": {**reply.cost, **kit.PROGRAM_RUN}, "stop": stop}


def finalize(state: ResampleState) -> dict:
    """The first passing program, else the one passing the most public tests."""
    chosen = choose(state["nodes"])
    if chosen is None:
        return kit.finish(state, None, "", None, "model_error")
    return kit.finish_node(state, chosen["id"], state.get("stop") or "budget_exhausted")


def graph_builder(model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled resampling graph; ``model`` replaces the context's model."""
    builder = kit.builder(STATE, CONTEXT)
    kit.add_nodes(builder, {"start": kit.starter(FRESH, recursion_limit, CONTEXT, roles), "sample": sample,
                            "finalize": finalize}, model)
    builder.add_edge(START, "start")
    builder.add_edge("start", "sample")
    builder.add_conditional_edges("sample", lambda s: "finalize" if s["stop"] else "sample", ["sample", "finalize"])
    selection.add_selection(builder, model)
    return builder


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "resample"):
    """Compile the resampling baseline; ``model`` overrides the context's model (library use, tests)."""
    return graph_builder(model).compile(checkpointer=checkpointer, name=name)


graph = build_graph()
