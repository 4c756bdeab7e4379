"""BESTER (Song et al., 2024): best-first search over self-reflection repairs.

    START -> start -> initial -> select --(passes every public test / rounds spent)--> finalize -> END
                          ^  \\--(otherwise)--> plan -> dispatch --Send--> reflect_one --> dispatch
                          |                               |  \\--Send--> repair_one  --> dispatch
                          \\-------------------------------/ (all k reflected and repaired)

A greedy initial program is run on the public tests. While it or the round's chosen program fails,
the Thinker samples k self-reflections of the chosen program (temperature 0.8, failing tests shown),
the Debugger writes one greedy repair per reflection (tests not shown), each repair is run, and the
repair passing the most tests is chosen (ties: earliest). The search stops at the first program that
passes every public test. Reflections and repairs are requested ``bester_concurrency`` at a time with
``Send``; each sample has its own seed, so the result does not depend on the concurrency. A problem
without public tests stops after the initial program (nothing to repair against; the paper does not
cover the case), and is reported unverified.
"""

from __future__ import annotations

import difflib
import math
import random
import re
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import Field

from codeforest.agents import debugger, solver, thinker
from codeforest.context import Context
from codeforest.graphs import kit, selection
from codeforest.graphs.state import Execution, NodeRecord, SearchState
from codeforest.tools.testing import failures_text

BUDGET_UNIT = "llm_calls"
SELECTIONS = ("most_tests", "random", "code", "min_diff", "max_diff")


class BesterContext(Context):
    """BESTER's settings (SPEC-codetree-bester-codeprm.md §2): the paper's defaults."""

    bester_depth: int = Field(default=2, ge=0, description="BESTER depth N: rounds of repairs (2).")
    bester_width: int = Field(default=5, ge=1, description=(
        "BESTER k: self-reflections, each with one repair, per round (5)."))
    bester_reflection_temperature: float = Field(default=0.8, ge=0, le=2, description=(
        "Sampling temperature of the self-reflections (0.8); programs and repairs are greedy."))
    bester_loop: Literal["rounds", "literal"] = Field(default="rounds", description=(
        "'rounds': the initial program, then N rounds of k reflections -> k repairs -> select (1 + 2Nk = 21 "
        "calls, the paper's count; the SPEC's reading). 'literal': Algorithm 1 as printed, N iterations of "
        "generate -> select -> reflect, so N-1 repair rounds (its last reflections are never used and not "
        "requested: 11 calls)."))
    bester_selection: Literal["most_tests", "random", "code", "min_diff", "max_diff"] = Field(
        default="most_tests", description=(
            "Which repair a round keeps: 'most_tests' passed (the paper; ties: earliest), or Table 5's "
            "ablations: 'random' (seeded by the problem id and round), 'code' (the first repair whose "
            "reflection shows code), 'min_diff' / 'max_diff' (the fewest / most changed lines against the "
            "program reflected on; ties: earliest)."))
    bester_final: Literal["auto", "best", "last_round"] = Field(default="auto", description=(
        "Program returned when none passes every public test: 'best' of the programs the rounds kept (ties: "
        "earliest) or 'last_round' (the paper's pseudocode: the last round's choice). 'auto': 'best', except "
        "'last_round' under random selection, whose ablation means nothing unless its choice is returned."))
    bester_feedback: Literal["reflection", "execution"] = Field(default="reflection", description=(
        "What a repair is given: 'reflection', a sampled self-reflection (BESTER); 'execution', the paper's "
        "Ex. Feedback baseline: no self-reflection, the failing tests in its place, and the k repairs sampled "
        "at the reflection temperature with a seed each (the paper does not say how its repairs differ; "
        "greedy ones would be identical). 1 + N k calls."))
    bester_repair: Literal["bester", "reflexion"] = Field(default="bester", description=(
        "How a repair is asked, given a reflection: 'bester' (App. D: the query, the program, the reflection; "
        "the failing tests reach it only through the reflection) or 'reflexion' (Reflexion's multi-turn chat, "
        "as CodeTree's released Reflexion baseline and its Debugger prompt: the program, its test results, "
        "the reflection). Ex. Feedback's repairs are always BESTER's."))
    bester_concurrency: int = Field(default=1, ge=1, description=(
        "Reflections / repairs requested at once (LangGraph Send); results do not depend on it. The "
        "embedded server gets as many parallel slots."))

    def slots_needed(self) -> int:
        """Concurrent reflections and repairs need as many server slots."""
        return max(self.server_slots, self.bester_concurrency)


CONTEXT = BesterContext


class BesterState(SearchState, total=False):
    """The common state plus the search's position."""

    round: int  # repair rounds started
    selected: str | None  # the chosen program of the latest round (S*)
    best: str | None  # the best program over the whole search
    stop: str | None  # set when the caller's recursion limit leaves no room for another round


STATE = BesterState
FRESH = {"round": 0, "selected": None, "best": None, "stop": None}


def repair_rounds(context: BesterContext) -> int:
    """Rounds of k reflections and k repairs: N ('rounds', the paper's 21 calls) or N - 1 ('literal')."""
    return context.bester_depth if context.bester_loop == "rounds" else max(0, context.bester_depth - 1)


def roles(context: BesterContext) -> set[str]:
    """The roles this graph calls under these settings: the Solver; with repair rounds the Debugger, the
    self-reflection (``bester_feedback='reflection'``) and the selector's."""
    rounds = repair_rounds(context) >= 1
    called = {"solver"} | ({"debugger"} if rounds else set())
    if rounds and context.bester_feedback == "reflection":
        called.add("reflection")
    return kit.roles_called(context, called, choices=rounds)


def budget(context: BesterContext) -> int:
    """BESTER's budget in its unit, model calls: 1 + 2 k per repair round (21 for N = 2, k = 5); k per round
    without reflections (Ex. Feedback)."""
    per_child = 2 if context.bester_feedback == "reflection" else 1
    return 1 + per_child * context.bester_width * repair_rounds(context)


def round_steps(context: BesterContext) -> int:
    """Steps of one repair round: plan, dispatch, then a step and a dispatch per batch of reflections and repairs."""
    return 2 + 4 * math.ceil(context.bester_width / context.bester_concurrency)


def recursion_limit(context: BesterContext) -> int:
    """Steps of the longest run: start, initial, a select and a round per repair round, a last select, finalize."""
    return kit.recursion_limit(4 + repair_rounds(context) * (1 + round_steps(context)))


# --- decision rules (pure) --------------------------------------------------------------------------

def passes(execution: Execution) -> bool:
    """BESTER's stop rule: every public test passes (with none, there is nothing left to repair)."""
    return execution.get("passed", 0) == execution.get("total", 0)


def rank(node: NodeRecord) -> tuple:
    """Best-first key: most public tests passed, then the earliest."""
    return (-node.get("execution", {}).get("passed", 0), node["order"])


def choose(candidates: list[NodeRecord], rule: str, problem_id: str, round_: int,
           reflected: str = "") -> NodeRecord:
    """The round's chosen program: the most tests passed (ties: earliest), or one of Table 5's rules (the
    ``reflected`` program is the one the round's repairs start from)."""
    if rule not in SELECTIONS:
        raise ValueError(f"bester_selection must be one of {', '.join(SELECTIONS)}, not {rule!r}")
    ordered = sorted(candidates, key=lambda n: n["order"])
    if rule == "random":
        return random.Random(f"{problem_id}:{round_}").choice(ordered)
    if rule == "code":  # the paper does not say what to keep when no reflection shows code: the first repair
        return next((n for n in ordered if shows_code(n.get("text", ""))), ordered[0])
    if rule in ("min_diff", "max_diff"):
        sign = 1 if rule == "min_diff" else -1
        return min(ordered, key=lambda n: sign * changed_lines(reflected, n.get("code", "")))
    return min(ordered, key=rank)


def shows_code(text: str) -> bool:
    """A reflection containing a code snippet: a fenced block, inline code, or a Python-looking line."""
    return "```" in text or re.search(r"`[^`\n]+`", text) is not None or \
        re.search(r"^\s*(def |return |for |while |if .*:|[A-Za-z_]\w* = )", text, re.M) is not None


def changed_lines(before: str, after: str) -> int:
    """Lines added or removed between two programs (a unified diff's +/- lines)."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))


def waiting(nodes: dict[str, NodeRecord], parent: str, batch: int) -> tuple[str, list[str]]:
    """The next batch of work below ``parent``: reflections first, then repairs; ``("select", [])`` when done."""
    children = sorted((n for n in nodes.values() if n.get("parent") == parent), key=lambda n: n["order"])
    for field, target in (("text", "reflect_one"), ("code", "repair_one")):
        todo = [c["id"] for c in children if field not in c]
        if todo:
            return target, todo[:batch]
    return "select", []


# --- nodes ----------------------------------------------------------------------------------------------

def initial(state: BesterState, runtime: Runtime[BesterContext], model: BaseChatModel | None = None) -> dict:
    """The greedy initial program, run on the public tests."""
    context = kit.settings(runtime, CONTEXT)
    reply = solver.write_code(kit.chat_model(context, model), kit.prompt(context, "solver_bester"), state["problem"])
    node = kit.new_node(1, parent=None, kind="code", text="", announce=False)
    kit.emit("node_created", node=node["id"], parent=None, depth=1, text="initial program")
    result, tested = kit.run_program(state["problem"], reply.value, context, node["id"], feedback=failures_text)
    return {"nodes": {node["id"]: {**node, **tested, "value": result.pass_rate}},
            "cost": {**reply.cost, **kit.PROGRAM_RUN}}


def select(state: BesterState, runtime: Runtime[BesterContext]) -> dict:
    """Keep the round's best repair (or the initial program) and decide whether another round follows."""
    context = kit.settings(runtime, CONTEXT)
    nodes = state["nodes"]
    candidates = [n for n in nodes.values() if n.get("parent") == state["selected"] and "execution" in n]
    chosen = choose(candidates, context.bester_selection, state["problem"]["id"], state["round"],
                    nodes.get(state["selected"] or "", {}).get("code", ""))
    best = nodes.get(state["best"] or "")
    if best is None or rank(chosen) < rank(best):
        best = chosen
    kit.emit("selected", node=chosen["id"], round=state["round"], passed=chosen["execution"]["passed"],
             total=chosen["execution"]["total"], best=best["id"])
    update: dict = {"selected": chosen["id"], "best": best["id"]}
    solved = passes(chosen["execution"])
    if (not solved or kit.wants_more(nodes, context)) and state["round"] < repair_rounds(context):
        if kit.steps_left(state) < round_steps(context) + 2:  # the round, a select and finalize
            update["stop"] = kit.STEP_LIMIT
        elif solved and state["selected"]:  # min_candidates: more repairs of the same program, new seeds
            update["selected"] = state["selected"]
        else:
            update["nodes"] = {chosen["id"]: {"status": "refined"}}  # its reflections come next
    return update


def plan(state: BesterState, runtime: Runtime[BesterContext]) -> dict:
    """k children of the chosen program, each waiting for its reflection and repair (Ex. Feedback: for its
    repair alone, the failing tests standing in for the reflection)."""
    context = kit.settings(runtime, CONTEXT)
    parent = state["nodes"][state["selected"]]
    base = kit.next_order(state["nodes"])
    shown = {}
    if context.bester_feedback == "execution":
        shown = {"text": kit.prompt(context, "debugger_bester").render(
            "execution_feedback", errors=parent.get("feedback", ""))}
    children = {}
    for j in range(context.bester_width):
        child = kit.new_node(base + j, parent=parent, kind="reflection", announce=False,
                             seed=state["round"] * context.bester_width + j + 1)
        children[child["id"]] = {**child, **shown}
    return {"nodes": children, "round": state["round"] + 1}


def dispatch(state: BesterState) -> dict:
    """A join point: the next batch is sent from here."""
    return {}


def reflect_one(payload: dict, runtime: Runtime[BesterContext], model: BaseChatModel | None = None) -> dict:
    """One sampled self-reflection on the chosen program (its own seed), shown its failing tests."""
    context = kit.settings(runtime, CONTEXT)
    node = payload["nodes"][payload["current"]]
    parent = payload["nodes"][node["parent"]]
    llm = kit.chat_model(context, model).bind(temperature=context.bester_reflection_temperature, seed=node["seed"])
    reflection = thinker.self_reflection(llm, kit.prompt(context, "thinker_bester"), payload["problem"],
                                         code=parent["code"], errors=parent.get("feedback", ""))
    kit.emit("node_created", node=node["id"], parent=parent["id"], depth=node["depth"], text=reflection.value)
    return {"nodes": {node["id"]: {"text": reflection.value}}, "cost": reflection.cost}


def repair_one(payload: dict, runtime: Runtime[BesterContext], model: BaseChatModel | None = None) -> dict:
    """One greedy repair from a reflection (the tests are not shown, but with ``bester_repair='reflexion'``), run
    on the public tests; under Ex. Feedback, a sampled repair from the failing tests."""
    context = kit.settings(runtime, CONTEXT)
    node = payload["nodes"][payload["current"]]
    parent = payload["nodes"][node["parent"]]
    llm = kit.chat_model(context, model)
    if context.bester_feedback == "execution":
        llm = llm.bind(temperature=context.bester_reflection_temperature, seed=node["seed"])
    if context.bester_repair == "reflexion" and context.bester_feedback == "reflection":
        reply = debugger.repair(llm, kit.prompt(context, "debugger"), payload["problem"], code=parent["code"],
                                feedback=parent.get("feedback", ""), reflection=node["text"])
    else:
        reply = debugger.repair_from_reflection(llm, kit.prompt(context, "debugger_bester"), payload["problem"],
                                                code=parent["code"], reflection=node["text"])
    kit.emit("generated", node=node["id"], depth=node["depth"])
    result, tested = kit.run_program(payload["problem"], reply.value, context, node["id"], feedback=failures_text)
    return {"nodes": {node["id"]: {**tested, "value": result.pass_rate}},
            "cost": {**reply.cost, **kit.PROGRAM_RUN}}


def finalize(state: BesterState, runtime: Runtime[BesterContext]) -> dict:
    """Return the passing program, else the best of the search or the last round's (``bester_final``)."""
    context = kit.settings(runtime, CONTEXT)
    selected = state["selected"]
    if kit.failed(state):  # a model call failed for good: the best program tested so far
        tested = [n for n in state["nodes"].values() if "execution" in n]
        return kit.finish_node(state, min(tested, key=rank)["id"] if tested else None, "model_error")
    for node_id in (state["best"], selected):  # the same node unless min_candidates kept the search going
        if passes(state["nodes"][node_id]["execution"]):
            return kit.finish_node(state, node_id, "solved")
    chosen = state["best"] if final_rule(context) == "best" else selected
    return kit.finish_node(state, chosen, state["stop"] or "depth_exhausted")


def final_rule(context: BesterContext) -> str:
    """``bester_final``, or by default 'best', and 'last_round' under random selection (Table 5's ablation)."""
    if context.bester_final != "auto":
        return context.bester_final
    return "last_round" if context.bester_selection == "random" else "best"


# --- wiring ---------------------------------------------------------------------------------------------

def next_work(state: BesterState, runtime: Runtime[BesterContext]):
    """Send the next batch of reflections or repairs; when the round is done, select."""
    if kit.failed(state):  # a branch's model call failed: its error handler already went to finalize
        return END
    target, batch = waiting(state["nodes"], state["selected"], kit.settings(runtime, CONTEXT).bester_concurrency)
    if not batch:
        return target
    return [Send(target, {"problem": state["problem"], "nodes": state["nodes"], "current": child,
                          "cost": state.get("cost", {})})  # what was spent, for the token budget
            for child in batch]


def graph_builder(model: BaseChatModel | None = None, context: type[BesterContext] = CONTEXT) -> StateGraph:
    """The uncompiled BESTER graph; ``model`` replaces the context's model; ``context``: a preset's class."""
    builder = kit.builder(STATE, context)
    nodes = {"initial": initial, "select": select, "plan": plan, "dispatch": dispatch, "reflect_one": reflect_one,
             "repair_one": repair_one, "finalize": finalize}
    kit.add_nodes(builder, {"start": kit.starter(FRESH, recursion_limit, context, roles),
                            **{name: kit.with_context(fn, context) for name, fn in nodes.items()}}, model)
    builder.add_edge(START, "start")
    builder.add_edge("start", "initial")
    builder.add_edge("initial", "select")
    builder.add_conditional_edges("select", lambda s: "plan" if s["nodes"][s["selected"]]["status"] == "refined"
                                  else "finalize", ["plan", "finalize"])
    builder.add_edge("plan", "dispatch")
    builder.add_conditional_edges("dispatch", kit.with_context(next_work, context),
                                  ["reflect_one", "repair_one", "select", END])
    builder.add_edge("reflect_one", "dispatch")
    builder.add_edge("repair_one", "dispatch")
    selection.add_selection(builder, model)
    return builder


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "bester"):
    """Compile BESTER; ``model`` overrides the context's model (library use, tests)."""
    return graph_builder(model).compile(checkpointer=checkpointer, name=name)


graph = build_graph()
