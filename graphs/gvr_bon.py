"""CodePRM (2025): Generate-Verify-Refine with Best-of-N over thought chains.

    START -> start -> think --(steps left)--> think
                          \\--> write_code -> evaluate --(failing chains, refinements left)--> verify -> refine
                                   ^                    \\--> finalize <-----(nothing flagged)----/        |
                                   \\------------------------------------------------------------------------/

N chains of ``gvr_bon_steps`` thoughts (App. A: 4) are sampled one step at a time (temperature 0.7, a
seed per chain and step, the released BestOfN_Step.py); each chain's code is written (temperature 0)
and run on the public tests, and valued by the Verifier's reward (the paper's Best-of-N: the aggregate
step score; ``pub_prm`` and ``pub_test`` as in GVR-MCTS). Chains whose code fails a public test go
through the same Verify/Refine as GVR-MCTS (the scores already computed for that code are reused, as
released), get new code and a new value (a chain with nothing flagged keeps its code; with none flagged in
any chain the search ends). The final program is the highest-valued chain's code, ties to
the earliest chain.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import Field

from codeforest.agents import rethink, solver, thinker
from codeforest.agents.verifier import numbered, verify
from codeforest.context import VerifierContext
from codeforest.cost import total_cost
from codeforest.graphs import codeprm, kit, search, selection
from codeforest.graphs.gvr import best_program, retired_scores
from codeforest.graphs.state import SearchState
from codeforest.tools.testing import prm_feedback

BUDGET_UNIT = "chains"
SCORED_VERIFY = ("threshold", "locate_min")  # the gvr_bon_verify modes that flag from the Verifier's scores


class GvrBonContext(VerifierContext):
    """Best-of-N GVR's settings (SPEC-codetree-bester-codeprm.md §3.4, the released BestOfN_Step.py)."""

    gvr_bon_n: int = Field(default=16, ge=1, description="Best-of-N budget: thought chains (16).")
    gvr_bon_steps: int = Field(default=4, ge=1, description="Thoughts per chain (App. A: 4).")
    gvr_bon_temperature: float = Field(default=0.7, ge=0, le=2, description="Thought sampling temperature (0.7).")
    gvr_bon_reward: Literal["prm", "pub_prm", "pub_test"] = Field(default="prm", description=(
        "A chain's value: the Verifier's aggregate step score (the paper's Best-of-N), pass rate + that score "
        "when every public test passes, or the public pass rate."))
    gvr_bon_verify: Literal["threshold", "locate_min", "llm_locate", "random", "last"] = Field(
        default="threshold", description=(
            "Which thoughts of failing code are refined: every one θ flags (none flagged: verifier_unflagged), "
            "or only the lowest; or without scores, as gvr_verify: the one the model names, a random one, or the "
            "last."))
    gvr_bon_max_refines: int = Field(default=1, ge=0, description="Verify-Refine rounds (the released code: 1).")
    gvr_bon_prm_agg: Literal["max", "min", "mean", "last"] = Field(default="max", description=(
        "How step scores become one reward (the released code: max)."))


CONTEXT = GvrBonContext


class GvrBonState(SearchState, total=False):
    """The common state plus each chain's last node, the sampling step, refinement rounds and every program."""

    chains: list[str]  # the last thought of each chain, in chain order
    steps: int
    rounds: int
    pending: list[str]  # chains (by last node) whose code is to be written and valued
    flagged: dict[str, list[str]]  # chain -> the thoughts to refine
    programs: Annotated[list[dict], operator.add]
    stop: str | None  # step_limit: the caller's recursion limit cut the sampling or the refinement short


STATE = GvrBonState
FRESH = {"chains": [], "steps": 0, "rounds": 0, "pending": [], "flagged": {}, "programs": Overwrite([]),
         "stop": None}


def roles(context: GvrBonContext) -> set[str]:
    """The roles this graph calls under these settings: the LLM verifier (a problem without public tests is always
    scored), the locator (``gvr_bon_verify='llm_locate'``) and Refine where chains are refined, and the
    selector's."""
    called = codeprm.roles(context, context.gvr_bon_max_refines, context.gvr_bon_verify)
    return kit.roles_called(context, called, choices=context.gvr_bon_n >= 2 or context.gvr_bon_max_refines >= 1)


def budget(context: GvrBonContext) -> int:
    """Best-of-N's budget in its unit: thought chains."""
    return context.gvr_bon_n


def recursion_limit(context: GvrBonContext) -> int:
    """start, one think per step, write_code, evaluate, four per refinement round, finalize."""
    return kit.recursion_limit(4 + context.gvr_bon_steps + 4 * context.gvr_bon_max_refines)


# --- decision rules (pure) --------------------------------------------------------------------------

def chain_ids(nodes: dict, last: str) -> list[str]:
    """A chain's thoughts from the first to ``last``."""
    return search.path_to(nodes, last)


def chain_texts(nodes: dict, last: str) -> list[str]:
    """A chain's thoughts' texts from the first to ``last``."""
    return [nodes[j]["text"] for j in chain_ids(nodes, last)]


def chain_value(pass_rate: float, has_tests: bool, prm_score: float | None, reward: str) -> float:
    """``prm``: the aggregate step score; ``pub_prm``: pass rate, + the score when all pass; ``pub_test``: pass
    rate. Without public tests every mode falls back to the score (nothing else can tell chains apart)."""
    if reward == "prm" or not has_tests:
        return prm_score or 0.0
    if reward == "pub_prm" and pass_rate == 1.0:
        return pass_rate + (prm_score or 0.0)
    return pass_rate


# --- nodes --------------------------------------------------------------------------------------------

def think(state: GvrBonState, runtime: Runtime[GvrBonContext], model: BaseChatModel | None = None) -> dict:
    """One more sampled thought for every chain (the first step starts the N chains)."""
    context = kit.settings(runtime, CONTEXT)
    llm, prompt = kit.chat_model(context, model), kit.prompt(context, "thinker_gvr")
    nodes, step = state["nodes"], state["steps"]
    lasts = state["chains"] or [None] * context.gvr_bon_n
    base, new, costs, chains = kit.next_order(nodes), {}, [], []
    for i, last in enumerate(lasts):
        previous = chain_texts(nodes, last) if last else []
        sampled = llm.bind(temperature=context.gvr_bon_temperature, seed=step * context.gvr_bon_n + i + 1)
        reply = thinker.chain_step(sampled, prompt, state["problem"], previous=numbered(previous))
        costs.append(reply.cost)
        node = kit.new_node(base + i, parent=nodes[last] if last else None, kind="thought", text=reply.value)
        new[node["id"]] = node
        chains.append(node["id"])
    update = {"nodes": new, "chains": chains, "steps": step + 1, "pending": chains, "cost": total_cost(costs)}
    if step + 1 < context.gvr_bon_steps and kit.steps_left(state) < 4:  # think, write_code, evaluate, finalize
        update["stop"] = kit.STEP_LIMIT
    return update


def write_code(state: GvrBonState, runtime: Runtime[GvrBonContext], model: BaseChatModel | None = None) -> dict:
    """Code for each pending chain from its thoughts, run on the public tests."""
    context = kit.settings(runtime, CONTEXT)
    llm, prompt, nodes = kit.chat_model(context, model), kit.prompt(context, "solver_mcts"), state["nodes"]
    updates, costs = {}, []
    for last in state["pending"]:
        thoughts = chain_texts(nodes, last)
        reply = solver.write_code(llm, prompt, state["problem"], thoughts=numbered(thoughts))
        costs.append({**reply.cost, **kit.PROGRAM_RUN})
        _, record = kit.run_program(state["problem"], reply.value, context, last, feedback=prm_feedback)
        updates[last] = {**record, **retired_scores(nodes[last])}
        kit.keep({"nodes": {last: updates[last]}, "cost": kit.PROGRAM_RUN})
    return {"nodes": updates, "cost": total_cost(costs)}


def evaluate(state: GvrBonState, runtime: Runtime[GvrBonContext], model: BaseChatModel | None = None) -> dict:
    """Each pending chain's value: the Verifier's reward (and/or the public pass rate, by ``gvr_bon_reward``)."""
    context = kit.settings(runtime, CONTEXT)
    nodes, scorer = state["nodes"], codeprm.verifier(context, kit.chat_model(context, model))
    updates, costs, programs = {}, [], []
    for last in state["pending"]:
        node, record = nodes[last], {}
        execution = node["execution"]
        has_tests, pass_rate = bool(execution["total"]), execution["pass_rate"]
        prm_score = None
        if context.gvr_bon_reward == "prm" or not has_tests or (
                context.gvr_bon_reward == "pub_prm" and pass_rate == 1.0):
            thoughts = chain_texts(nodes, last)
            scored = verify(scorer, state["problem"]["prompt"], thoughts, node["code"], node["feedback"])
            costs.append(scored.cost)
            record.update(prm_scores=scored.value, prm_unread=not scored.parsed)
            scores = codeprm.valued_scores(scored, context, f"{state['problem']['id']}:{last}:{state['rounds']}:value")
            prm_score = codeprm.aggregate(scores, context.gvr_bon_prm_agg)
        record["value"] = chain_value(pass_rate, has_tests, prm_score, context.gvr_bon_reward)
        kit.emit("value", node=last, value=round(record["value"], 4))
        updates[last] = record
        programs.append({"node": last, "code": node["code"], "value": record["value"], "pass_rate": pass_rate,
                         "execution": execution, "refined": state["rounds"] > 0})
        kit.keep({"nodes": {last: record}, "programs": programs[-1:]})
    update = {"nodes": updates, "programs": programs, "pending": [], "cost": total_cost(costs)}
    fails = any(kit.fails_public(nodes[c].get("execution")) for c in state["chains"])
    if fails and state["rounds"] < context.gvr_bon_max_refines and kit.steps_left(state) < 5:
        update["stop"] = kit.STEP_LIMIT  # no room for verify, refine, write_code, evaluate, finalize
    return update


def verify_chains(state: GvrBonState, runtime: Runtime[GvrBonContext], model: BaseChatModel | None = None) -> dict:
    """Flag the thoughts to refine in every failing chain (scores of this code are reused when there are)."""
    context = kit.settings(runtime, CONTEXT)
    nodes, llm, problem = state["nodes"], kit.chat_model(context, model), state["problem"]["prompt"]
    scorer, flagged, updates, costs = codeprm.verifier(context, llm), {}, {}, []
    for last in (c for c in state["chains"] if kit.fails_public(nodes[c].get("execution"))):
        ids = chain_ids(nodes, last)
        thoughts, known = [nodes[j]["text"] for j in ids], nodes[last].get("prm_scores")
        unread = bool(known) and nodes[last].get("prm_unread", False)
        if not known and context.gvr_bon_verify in SCORED_VERIFY:  # kept with the code, for a later round
            scored = verify(scorer, problem, thoughts, nodes[last]["code"], nodes[last]["feedback"])
            costs.append(scored.cost)
            known, unread = scored.value, not scored.parsed
            updates[last] = {"prm_scores": known, "prm_unread": unread}
        positions, scores, cost = codeprm.flawed_thoughts(
            context.gvr_bon_verify, context, llm, problem, thoughts, nodes[last]["code"], nodes[last]["feedback"],
            shown=problem + numbered(thoughts), key=f"{state['problem']['id']}:{last}:{state['rounds']}",
            scores=known or None, unread=unread)
        costs.append(cost)
        named = [ids[i] for i in positions]
        kit.emit("verified", node=last, scores=scores and [round(s, 3) for s in scores], flagged=named)
        if named:  # a chain with nothing flagged keeps its code
            flagged[last] = named
    return {"nodes": updates, "flagged": flagged, "cost": total_cost(costs)}


def refine(state: GvrBonState, runtime: Runtime[GvrBonContext], model: BaseChatModel | None = None) -> dict:
    """Rewrite each failing chain's flagged thoughts one after another, each seeing the ones already rewritten
    (the released Best-of-N updates its state after every refinement); those chains get new code next."""
    context = kit.settings(runtime, CONTEXT)
    llm, prompt, nodes = kit.chat_model(context, model), kit.prompt(context, "rethink_gvr"), state["nodes"]
    updates, costs = {}, []
    for last, to_refine in state["flagged"].items():
        ids = chain_ids(nodes, last)
        texts = {j: nodes[j]["text"] for j in ids}
        for thought_id in to_refine:
            shown = state["problem"]["prompt"] + numbered([texts[j] for j in ids])
            reply = rethink.refine(llm, prompt, state=shown, code=nodes[last]["code"],
                                   feedback=nodes[last]["feedback"], refine_id=ids.index(thought_id) + 1)
            costs.append(reply.cost)
            if update := codeprm.refined_thought(nodes[thought_id], reply.value):
                updates[thought_id], texts[thought_id] = update, reply.value
                kit.emit("refined", node=thought_id, old=nodes[thought_id]["text"], new=reply.value)
    return {"nodes": updates, "pending": list(state["flagged"]), "flagged": {}, "rounds": state["rounds"] + 1,
            "cost": total_cost(costs)}


def finalize(state: GvrBonState) -> dict:
    """The highest-valued chain's current code (a code's first value counts); ties to the earliest chain."""
    latest = {p["node"]: p for p in state["programs"]}  # each chain's last program
    chosen = best_program([latest[c] for c in state["chains"] if c in latest])
    if chosen is None:  # the token budget ran out before any chain was valued: the most public tests passed
        coded = [state["nodes"][c] for c in state["chains"] if state["nodes"][c].get("execution")]
        best = kit.best(coded, key=lambda n: n["execution"]["pass_rate"])
        chosen = best and {"node": best["id"], "code": best["code"], "execution": best["execution"]}
    reason = state.get("stop") or "budget_exhausted"
    if chosen is None:
        return kit.finish(state, None, "", None, reason)
    return kit.finish(state, chosen["node"], chosen["code"], chosen["execution"], reason)


# --- wiring ---------------------------------------------------------------------------------------------

def after_think(state: GvrBonState, runtime: Runtime[GvrBonContext]) -> str:
    """Another step while the chains are short (and steps are left for code, value and finalize)."""
    more = state["steps"] < kit.settings(runtime, CONTEXT).gvr_bon_steps and not state.get("stop")
    return "think" if more else "write_code"


def after_evaluate(state: GvrBonState, runtime: Runtime[GvrBonContext]) -> str:
    """Verify while some chain fails and refinement rounds are left; else finalize."""
    context = kit.settings(runtime, CONTEXT)
    some_fail = any(kit.fails_public(state["nodes"][c].get("execution")) for c in state["chains"])
    return "verify" if some_fail and not state.get("stop") and state["rounds"] < context.gvr_bon_max_refines \
        else "finalize"


def graph_builder(model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled Best-of-N GVR graph; ``model`` replaces the context's model."""
    builder = kit.builder(STATE, CONTEXT)
    kit.add_nodes(builder, {"start": kit.starter(FRESH, recursion_limit, CONTEXT, roles), "think": think,
                            "write_code": write_code, "evaluate": evaluate, "verify": verify_chains,
                            "refine": refine, "finalize": finalize}, model)
    builder.add_edge(START, "start")
    builder.add_edge("start", "think")
    builder.add_conditional_edges("think", after_think, ["think", "write_code"])
    builder.add_edge("write_code", "evaluate")
    builder.add_conditional_edges("evaluate", after_evaluate, ["verify", "finalize"])
    builder.add_conditional_edges("verify", lambda s: "refine" if s["flagged"] else "finalize", ["refine", "finalize"])
    builder.add_edge("refine", "write_code")
    selection.add_selection(builder, model)
    return builder


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "gvr_bon"):
    """Compile Best-of-N GVR; ``model`` overrides the context's model (library use, tests)."""
    return graph_builder(model).compile(checkpointer=checkpointer, name=name)


graph = build_graph()
