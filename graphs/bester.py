"""BESTER (Song et al., 2024): best-first search over self-reflection repairs.

    START -> initial -> select --(passes every public test / rounds spent)--> finalize -> END
                          ^  \\--(otherwise)--> plan -> dispatch --Send--> reflect_one --> dispatch
                          |                               |  \\--Send--> repair_one  --> dispatch
                          \\-------------------------------/ (all k reflected and repaired)

A greedy initial program is run on the public tests. While it or the round's chosen program fails,
the Thinker samples k self-reflections of the chosen program (temperature 0.8, failing tests shown),
the Debugger writes one greedy repair per reflection (tests not shown), each repair is run, and the
repair passing the most tests is chosen (ties: earliest). The search stops at the first program that
passes every public test. Reflections and repairs are requested ``bester_concurrency`` at a time with
``Send``; each sample has its own seed, so the result does not depend on the concurrency. A problem
without public tests counts as passed by the initial program (the paper does not cover that case).
"""

from __future__ import annotations

import random

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from codeforest.agents import debugger, solver, thinker
from codeforest.agents.base import emit, prompt_for, resolve_model
from codeforest.context import Context
from codeforest.graphs.common import context_of, run_node_tests
from codeforest.graphs.state import NodeRecord, SearchInput, SearchOutput, SearchState, finish
from codeforest.problems import Problem
from codeforest.tools.testing import failures_text

BUDGET_UNIT = "llm_calls"
LOOPS = ("rounds", "literal")
SELECTIONS = ("most_tests", "random")
FINALS = ("best", "last_round")


def repair_rounds(context: Context) -> int:
    """Rounds of k reflections and k repairs: N ('rounds', the paper's 21 calls) or N - 1 ('literal')."""
    if context.bester_loop not in LOOPS:
        raise ValueError(f"bester_loop must be one of {', '.join(LOOPS)}, not {context.bester_loop!r}")
    if context.bester_width < 1 or context.bester_depth < 0:
        raise ValueError("bester_width must be at least 1 and bester_depth at least 0")
    return context.bester_depth if context.bester_loop == "rounds" else max(0, context.bester_depth - 1)


def budget(context: Context) -> int:
    """BESTER's budget in its unit, model calls: 1 + 2 k per repair round (21 for N = 2, k = 5)."""
    return 1 + 2 * context.bester_width * repair_rounds(context)


class BesterState(SearchState, total=False):
    """The common state plus the search's position."""

    round: int  # repair rounds started
    selected: str | None  # the chosen program of the latest round (S*)
    best: str | None  # the best program over the whole search


def _passes(node: NodeRecord) -> bool:
    execution = node.get("execution", {})
    return execution.get("total", 0) == 0 or execution.get("passed", 0) == execution.get("total", 0)


def _rank(node: NodeRecord) -> tuple:
    """Best-first key: most public tests passed, then the earliest."""
    return (-node.get("execution", {}).get("passed", 0), node["order"])


def choose(candidates: list[NodeRecord], rule: str, problem_id: str, round_: int) -> NodeRecord:
    """The round's chosen program: the most tests passed (ties: earliest), or one at random (seeded)."""
    if rule not in SELECTIONS:
        raise ValueError(f"bester_selection must be one of {', '.join(SELECTIONS)}, not {rule!r}")
    ordered = sorted(candidates, key=lambda n: n["order"])
    if rule == "random":
        return random.Random(f"{problem_id}:{round_}").choice(ordered)
    return min(ordered, key=_rank)


def _tested(problem: Problem, code: str, context: Context, node_id: str) -> dict:
    """Run a program on the public tests; the node fields it sets (feedback: the failing tests only)."""
    result, update = run_node_tests(problem, code, context, node_id)
    return {**update, "feedback": failures_text(result), "value": result.pass_rate}


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "bester"):
    """Compile BESTER; ``model`` overrides the context's model (library use, tests)."""

    def initial(state: BesterState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        repair_rounds(context)  # a bad loop option fails before any model call
        reply = solver.write_code(resolve_model(context, model), prompt_for(context, "solver_bester"),
                                  state["problem"])
        node: NodeRecord = {"id": "n1", "parent": None, "depth": 1, "kind": "code", "text": "", "order": 0,
                            "code": reply.code}
        emit("node_created", node="n1", parent=None, depth=1, text="initial program")
        node.update(_tested(state["problem"], reply.code, context, "n1"))
        return {"nodes": {"n1": node}, "round": 0, "selected": None, "best": None,
                "cost": {**reply.cost, "programs": 1, "sandbox_runs": 1}}

    def select(state: BesterState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        nodes = state["nodes"]
        parent = state.get("selected")
        candidates = [n for n in nodes.values() if n.get("parent") == parent and n.get("code")]
        chosen = choose(candidates, context.bester_selection, state["problem"]["id"], state["round"])
        best = nodes.get(state.get("best") or "")
        if best is None or _rank(chosen) < _rank(best):
            best = chosen
        emit("selected", node=chosen["id"], round=state["round"], passed=chosen["execution"]["passed"],
             total=chosen["execution"]["total"], best=best["id"])
        update = {"selected": chosen["id"], "best": best["id"]}
        if not _passes(chosen) and state["round"] < repair_rounds(context):
            update["nodes"] = {chosen["id"]: {"status": "refined"}}  # its reflections come next
        return update

    def after_select(state: BesterState, runtime: Runtime[Context]) -> str:
        return "plan" if state["nodes"][state["selected"]]["status"] == "refined" else "finalize"

    def plan(state: BesterState, runtime: Runtime[Context]) -> dict:
        """k children of the chosen program, each waiting for its reflection and repair."""
        context = context_of(runtime)
        parent = state["nodes"][state["selected"]]
        start = len(state["nodes"])
        children = {}
        for j in range(context.bester_width):
            child_id = f"n{start + j + 1}"
            children[child_id] = {"id": child_id, "parent": parent["id"], "depth": parent["depth"] + 1,
                                  "kind": "reflection", "status": "open", "order": start + j,
                                  "seed": state["round"] * context.bester_width + j + 1}
        return {"nodes": children, "round": state["round"] + 1}

    def dispatch(state: BesterState) -> dict:
        return {}

    def next_work(state: BesterState, runtime: Runtime[Context]):
        """Send the next batch: reflections first, then repairs; when all are done, select."""
        context = context_of(runtime)
        batch = max(1, context.bester_concurrency)
        children = sorted((n for n in state["nodes"].values() if n.get("parent") == state["selected"]),
                          key=lambda n: n["order"])
        for field, target in (("text", "reflect_one"), ("code", "repair_one")):
            waiting = [c["id"] for c in children if field not in c]
            if waiting:
                return [Send(target, {"problem": state["problem"], "nodes": state["nodes"], "current": child})
                        for child in waiting[:batch]]
        return "select"

    def reflect_one(payload: dict, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        node = payload["nodes"][payload["current"]]
        parent = payload["nodes"][node["parent"]]
        llm = resolve_model(context, model).bind(temperature=context.bester_reflection_temperature,
                                                 seed=node["seed"])
        reflection = thinker.self_reflection(llm, prompt_for(context, "thinker_bester"), payload["problem"],
                                             code=parent["code"], errors=parent.get("feedback", ""))
        emit("node_created", node=node["id"], parent=parent["id"], depth=node["depth"], text=reflection.text)
        return {"nodes": {node["id"]: {"text": reflection.text}}, "cost": reflection.cost}

    def repair_one(payload: dict, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        node = payload["nodes"][payload["current"]]
        parent = payload["nodes"][node["parent"]]
        reply = debugger.repair_from_reflection(resolve_model(context, model), prompt_for(context, "debugger_bester"),
                                                payload["problem"], code=parent["code"], reflection=node["text"])
        emit("generated", node=node["id"], depth=node["depth"])
        update = {"code": reply.code, **_tested(payload["problem"], reply.code, context, node["id"])}
        return {"nodes": {node["id"]: update}, "cost": {**reply.cost, "programs": 1, "sandbox_runs": 1}}

    def finalize(state: BesterState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        if context.bester_final not in FINALS:
            raise ValueError(f"bester_final must be one of {', '.join(FINALS)}, not {context.bester_final!r}")
        nodes = state["nodes"]
        selected = state["selected"]
        if _passes(nodes[selected]):
            chosen, reason = selected, "solved"
        else:
            chosen = state["best"] if context.bester_final == "best" else selected
            reason = "depth_exhausted"
        emit("finished", node=chosen, stop_reason=reason)
        return finish(nodes, chosen, reason)

    builder = StateGraph(BesterState, context_schema=Context, input_schema=SearchInput, output_schema=SearchOutput)
    for node_name, fn in (("initial", initial), ("select", select), ("plan", plan), ("dispatch", dispatch),
                          ("reflect_one", reflect_one), ("repair_one", repair_one), ("finalize", finalize)):
        builder.add_node(node_name, fn)
    builder.add_edge(START, "initial")
    builder.add_edge("initial", "select")
    builder.add_conditional_edges("select", after_select, ["plan", "finalize"])
    builder.add_edge("plan", "dispatch")
    builder.add_conditional_edges("dispatch", next_work, ["reflect_one", "repair_one", "select"])
    builder.add_edge("reflect_one", "dispatch")
    builder.add_edge("repair_one", "dispatch")
    builder.add_edge("finalize", END)
    return builder.compile(checkpointer=checkpointer, name=name).with_config(recursion_limit=10_000)


graph = build_graph()
