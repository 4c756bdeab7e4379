"""CodePRM (2025): Generate-Verify-Refine inside MCTS over thoughts (GVR-MCTS).

    START -> start -> expand_root -> select --(a leaf)--> simulate --(fails, may refine)--> verify
                                       \\--(no steps)--> finalize  ^      \\                   /       \\
                                                                    |      \\--> expand <--(none flagged)  (flagged)
                                                                    |              |                          |
                                                                    \\---------------------------------- refine <-/
                                                  select <--(rollouts left)-- backpropagate
                                                                              \\--> finalize

Per rollout (the released CodePRMMCTS.py, SPEC §3.4-3.5): P-UCB selection reaches a new thought; its
code is written from the problem and the path's thoughts (temperature 0) and run on the public tests.
Its value is the public pass rate, plus the Verifier's aggregate step score when every public test passes
(``pub_prm``, the paper's), or the pass rate alone (``pub_test``, the released default); the first value of a
code counts.
Failing code is verified: the Verifier scores every thought on the path, the flagged ones (threshold
θ, and when none is, nothing or the lowest: ``verifier_unflagged``; or one named by a score-free locator,
``gvr_verify``) are rewritten one after another by Refine, all seeing the same program and feedback, and
the code is written again (with nothing flagged it is kept and the node expanded; at most
``gvr_max_refines`` times per rollout, 1 as released). The node is then expanded (after failing code,
with its failing tests) and the value backpropagated (Q = max). A passing program does not stop the
search; the final program is the highest-valued, ties to the earliest. A problem without public tests
has nothing to fail: its programs are valued by the Verifier's aggregate score (the SPEC is silent; the
method's own evaluator decides).
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
from codeforest.agents.verifier import thoughts_state, verify
from codeforest.context import ThoughtTreeContext
from codeforest.cost import total_cost
from codeforest.graphs import codeprm, kit, mcts, search, selection
from codeforest.graphs.state import NodeRecord, SearchState
from codeforest.tools.released_exec import (
    CODEPRM_LABEL,
    RELEASED_JOIN_S,
    judged_as_released,
    unfinished_in_join,
)
from codeforest.tools.testing import prm_feedback

BUDGET_UNIT = "rollouts"
ROOT = kit.ROOT
FALLBACK_TEMPERATURE = 0.7  # the released code samples single thoughts when the list cannot be read


class GvrContext(ThoughtTreeContext):
    """GVR-MCTS's settings (SPEC-codetree-bester-codeprm.md §3.4-3.5): the paper's and released code's defaults."""

    gvr_rollouts: int = Field(default=16, ge=1, description="GVR-MCTS budget: rollouts (16).")
    gvr_width: int = Field(default=3, ge=1, description="GVR-MCTS thoughts per expansion (3).")
    gvr_c_base: float = Field(default=10.0, gt=0, description="P-UCB c_base (the released code: 10).")
    gvr_c: float = Field(default=4.0, ge=0, description="P-UCB exploration weight c (the released code: 4).")
    gvr_gamma: float = Field(default=1.0, gt=0, le=1, description=(
        "Discount per level in backpropagation: 1.0 (the paper states none), 0.9 (the released code)."))
    gvr_max_refines: int = Field(default=1, ge=0, description=(
        "Verify-Refine rounds per rollout for failing code (the released code: 1)."))
    gvr_verify: Literal["threshold", "locate_min", "llm_locate", "random", "last"] = Field(
        default="threshold", description=(
            "Which thoughts are refined: every one θ flags under verifier_threshold_rule (none flagged: see "
            "verifier_unflagged; Table 1), or only the lowest (Table 2); without scores (the released code's other "
            "locators): the one the model names (its argparse default 'llm'), a random one, or the last."))
    gvr_reward: Literal["pub_prm", "pub_test"] = Field(default="pub_prm", description=(
        "Node value: the public pass rate + the Verifier's aggregate step score when every public test passes "
        "(the paper's Table 1: the PRM 'provides additional rewards beyond the code's pass rate'), or the pass "
        "rate alone (pub_test, the released code's default)."))
    gvr_prm_agg: Literal["max", "min", "mean", "last"] = Field(default="max", description=(
        "How step scores become one reward (the released code: max)."))
    gvr_fallback: Literal["per_thought", "one_request"] = Field(default="per_thought", description=(
        "When a thought list cannot be read, the single thoughts that replace it are asked for: one request each, "
        "seeded (a rerun asks the same), or as released, one request for gvr_width replies (the endpoint's `n`, "
        "temperature 0.7, up to 1,024 tokens per thought, no seed), one child per reply it gives."))
    gvr_error_text: Literal["line", "released"] = Field(default="line", description=(
        "How a failing assert's error reads in the feedback: its error line ('ValueError: ...'), or as the released "
        "executor reports it, the frames of its harness (File \"f.py\", line 23, in <module> and the line) then "
        "the error, run so in the sandbox (function problems, whose reply is then judged as that executor reads "
        "it: its first python block after its 16 import lines); the tests of a function's program share 10 s, as "
        "the released executor waits 10 s for them all, and a run it would not have waited for (a test out of "
        "time, or all of them past 10 s) reads as its 21 'No result got!' failures and a pass rate of 0."))


CONTEXT = GvrContext


class GvrState(SearchState, total=False):
    """The common state plus the rollout's path, its refinements, and every program with its value."""

    path: list[str]
    rollouts: int
    refines: int  # Verify-Refine rounds in the current rollout
    flagged: list[str]  # the thoughts the Verifier flagged, to refine next
    programs: Annotated[list[dict], operator.add]  # {node, code, value, pass_rate, execution, refined}
    stop: str | None


STATE = GvrState
FRESH = {"path": [], "rollouts": 0, "refines": 0, "flagged": [], "programs": Overwrite([]), "stop": None}


def roles(context: GvrContext) -> set[str]:
    """The roles this graph calls under these settings: the LLM verifier (a problem without public tests is always
    scored), the locator (``gvr_verify='llm_locate'``) and Refine where thoughts are refined, and the selector's."""
    called = codeprm.roles(context, context.gvr_max_refines, context.gvr_verify)
    return kit.roles_called(context, called, choices=context.gvr_rollouts >= 2 or context.gvr_max_refines >= 1)


def budget(context: GvrContext) -> int:
    """GVR-MCTS's budget in its unit: rollouts."""
    return context.gvr_rollouts


def steps_per_rollout(context: GvrContext) -> int:
    """select, simulate, (verify, refine, simulate) per refinement, expand, backpropagate."""
    return 4 + 3 * context.gvr_max_refines


def recursion_limit(context: GvrContext) -> int:
    """Steps of the longest run: start, expand_root, the rollouts, finalize."""
    return kit.recursion_limit(3 + context.gvr_rollouts * steps_per_rollout(context))


# --- decision rules (pure) --------------------------------------------------------------------------

def value_of(pass_rate: float, has_tests: bool, prm_score: float | None, context: GvrContext) -> float:
    """A program's value: the pass rate, plus the Verifier's aggregate when it passes all (``pub_prm``);
    without public tests, the aggregate alone."""
    if not has_tests:
        return prm_score or 0.0
    if context.gvr_reward == "pub_prm" and pass_rate == 1.0:
        return pass_rate + (prm_score or 0.0)
    return pass_rate


def needs_prm_score(has_tests: bool, pass_rate: float, context: GvrContext) -> bool:
    """The Verifier scores a program for its value only under ``pub_prm`` when it passes, or without tests."""
    return not has_tests or (context.gvr_reward == "pub_prm" and pass_rate == 1.0)


def may_refine(node: NodeRecord, refines: int, context: GvrContext) -> bool:
    """Failing code is verified and refined while the rollout has refinements left."""
    return kit.fails_public(node.get("execution")) and refines < context.gvr_max_refines


def best_program(programs: list[dict]) -> dict | None:
    """The highest value over every generated code (a code's first value counts); ties go to the earliest."""
    return mcts.best_program(programs, "value")


# --- nodes --------------------------------------------------------------------------------------------

def expand_children(state: dict, context: GvrContext, model: BaseChatModel, parent_id: str,
                    failing: NodeRecord | None) -> dict:
    """``gvr_width`` thoughts with priors below ``parent_id``; a failing parent's code and tests come first.

    An unreadable list falls back as released: one sampled thought per child (temperature 0.7, a seed
    each), and "skip one thought step" (prior 1.0) for all when any of those cannot be read.
    """
    nodes, problem, released = state["nodes"], state["problem"], context.released_text
    previous = search.state_text(nodes, search.path_to(nodes, parent_id), released)
    code, feedback = (kit.shown_code(failing, context.code_shown), failing["feedback"]) if failing else (None, None)
    prompt = kit.prompt(context, "thinker_gvr")
    ideas = thinker.thoughts(model, prompt, problem, previous=previous, width=context.gvr_width, code=code,
                             feedback=feedback, structured=context.structured_output,
                             released="codeprm" if released else None)
    costs, items = [ideas.cost], ideas.value
    actions = [search.released_action(t) for t, _ in items] if released else None
    base = kit.next_order(nodes)
    if not ideas.parsed:
        sampled = []
        if context.gvr_fallback == "one_request":
            asked = thinker.sampled_thoughts(model, prompt, problem, previous=previous, n=context.gvr_width, code=code,
                                             feedback=feedback, released=released, temperature=FALLBACK_TEMPERATURE,
                                             max_tokens=min(context.gvr_width * 1024, 10000))
            costs.append(asked.cost)
            sampled = asked.value
        for i in range(context.gvr_width if context.gvr_fallback == "per_thought" else 0):
            one = thinker.one_thought(model.bind(temperature=FALLBACK_TEMPERATURE, seed=base + i), prompt, problem,
                                      previous=previous, code=code, feedback=feedback, released=released)
            costs.append(one.cost)
            sampled.append(one.value)
        items = sampled if all(sampled) else [(thinker.SKIP_THOUGHT, 1.0)] * context.gvr_width
        actions = [t for t, _ in items] if released else None  # the released state takes these without a label
    children = mcts.thought_children(nodes, parent_id, items, base, actions, refined=0)
    return {"nodes": children, "cost": total_cost(costs)}


def expand_root(state: GvrState, runtime: Runtime[GvrContext], model: BaseChatModel | None = None) -> dict:
    """The root and its first thoughts."""
    context = kit.settings(runtime, CONTEXT)
    return mcts.expand_root(state, context, kit.chat_model(context, model), expand_children)


def select(state: GvrState, runtime: Runtime[GvrContext]) -> dict:
    """P-UCB from the root down to a new thought; stop when too few steps are left for a rollout."""
    context = kit.settings(runtime, CONTEXT)
    path = mcts.select_path(state, context.gvr_c_base, context.gvr_c,
                            steps_needed=4)  # simulate, expand, backpropagate, finalize
    return {"path": path, "refines": 0, "flagged": []} if path else {"stop": kit.STEP_LIMIT}


def simulate(state: GvrState, runtime: Runtime[GvrContext], model: BaseChatModel | None = None) -> dict:
    """Write the leaf's code from the path's thoughts, run it on the public tests and value it."""
    context = kit.settings(runtime, CONTEXT)
    llm = kit.chat_model(context, model)
    nodes, problem, leaf = state["nodes"], state["problem"], state["path"][-1]
    thoughts = verifier_thoughts(nodes, state["path"], context)[1]
    reply = solver.write_code(llm, kit.prompt(context, "solver_mcts"), problem,
                              thoughts=search.state_text(nodes, state["path"], context.released_text))
    costs = [{**reply.cost, **kit.PROGRAM_RUN}]
    released = context.gvr_error_text == "released" and problem["kind"] == "function"
    result, record = kit.run_program(problem, reply.value, context, leaf, feedback=prm_feedback,
                                     budget=RELEASED_JOIN_S if released else None,
                                     judged=judged_as_released(reply.raw) if released else None)
    record.update(kit.kept_reply(reply.raw, context.code_shown))
    pass_rate = result.pass_rate
    if released:
        failed_texts = kit.released_failed(problem, reply.raw, result, context, label=CODEPRM_LABEL)
        if failed_texts:
            record["feedback"] = prm_feedback(result, failed_texts)
        if unfinished_in_join(result):  # the released executor gave up waiting: a pass rate of 0
            pass_rate = 0.0
    record.update(retired_scores(nodes[leaf]))  # after a refinement: the scores were the earlier program's
    has_tests, prm_score = result.total > 0, None

    def valued() -> dict:
        record["value"] = value_of(pass_rate, has_tests, prm_score, context)
        program = {"node": leaf, "code": reply.value, "value": record["value"], "pass_rate": pass_rate,
                   "execution": record["execution"], "refined": state.get("refines", 0) > 0,
                   **kit.kept_reply(reply.raw, context.code_shown)}
        return {"nodes": {leaf: dict(record)}, "programs": [program]}

    kit.keep({**valued(), "cost": kit.PROGRAM_RUN})  # valued without the Verifier if its call fails
    if needs_prm_score(has_tests, pass_rate, context) and thoughts:
        scored = verify(codeprm.verifier(context, llm), problem["prompt"], thoughts,
                        kit.shown_code(record, context.code_shown), record["feedback"])
        costs.append(scored.cost)
        record["prm_scores"] = scored.value
        scores = codeprm.valued_scores(scored, context, f"{problem['id']}:{leaf}:{state.get('refines', 0)}:value")
        prm_score = codeprm.aggregate(scores, context.gvr_prm_agg)
    update = valued()
    kit.emit("value", node=leaf, value=round(record["value"], 4))
    return {**update, "cost": total_cost(costs)}


def verifier_thoughts(nodes: dict[str, NodeRecord], path: list[str],
                      context: GvrContext) -> tuple[list[str], list[str]]:
    """The thought nodes of a path the Verifier, the locator and the refine number, and their texts (released_text:
    as the released code numbers them)."""
    if context.released_text:
        return search.released_numbered(nodes, path)
    ids = search.thought_ids(nodes, path)
    return ids, [nodes[i]["text"] for i in ids]


def retired_scores(node: NodeRecord) -> dict:
    """The fields that clear a node's Verifier scores before its new program is run: the scores move to the end of
    ``prm_history`` (a refined node's earlier programs), so they are never read as the new program's; GVR-BoN's
    ``prm_unread`` mark goes with them."""
    retired = {"prm_scores": None, **({"prm_unread": False} if node.get("prm_unread") else {})}
    if not node.get("prm_scores"):
        return retired
    return {**retired, "prm_history": [*node.get("prm_history", []), node["prm_scores"]]}


def verify_node(state: GvrState, runtime: Runtime[GvrContext], model: BaseChatModel | None = None) -> dict:
    """Flag the thoughts on the failing code's path to refine: from the Verifier's scores of every thought, or
    by a score-free locator (``gvr_verify``)."""
    context = kit.settings(runtime, CONTEXT)
    nodes, leaf = state["nodes"], state["path"][-1]
    ids, thoughts = verifier_thoughts(nodes, state["path"], context)
    node = nodes[leaf]
    positions, scores, cost = codeprm.flawed_thoughts(
        context.gvr_verify, context, kit.chat_model(context, model), state["problem"]["prompt"], thoughts,
        kit.shown_code(node, context.code_shown), node["feedback"],
        shown=thoughts_state(state["problem"]["prompt"], thoughts),
        key=f"{state['problem']['id']}:{leaf}:{state.get('refines', 0)}")
    flagged = [ids[i] for i in positions]
    kit.emit("verified", node=leaf, scores=scores and [round(s, 3) for s in scores], flagged=flagged)
    return {"nodes": {leaf: {"prm_scores": scores}} if scores else {}, "flagged": flagged, "cost": cost}


def refine(state: GvrState, runtime: Runtime[GvrContext], model: BaseChatModel | None = None) -> dict:
    """Refine rewrites each flagged thought in place, one after another, all from the same code and feedback."""
    context = kit.settings(runtime, CONTEXT)
    llm, prompt = kit.chat_model(context, model), kit.prompt(context, "rethink_gvr")
    nodes, node = state["nodes"], state["nodes"][state["path"][-1]]
    ids, thoughts = verifier_thoughts(nodes, state["path"], context)
    shown = thoughts_state(state["problem"]["prompt"], thoughts)
    updates, costs = {}, []
    for thought_id in state["flagged"]:
        reply = rethink.refine(llm, prompt, state=shown, code=kit.shown_code(node, context.code_shown),
                               feedback=node["feedback"], refine_id=ids.index(thought_id) + 1)
        costs.append(reply.cost)
        raw = reply.raw if context.released_text else None
        if update := codeprm.refined_thought(nodes[thought_id], reply.value, raw):
            updates[thought_id] = update
            kit.emit("refined", node=thought_id, old=nodes[thought_id]["text"], new=reply.value)
    return {"nodes": updates, "refines": state.get("refines", 0) + 1, "flagged": [], "cost": total_cost(costs)}


def expand(state: GvrState, runtime: Runtime[GvrContext], model: BaseChatModel | None = None) -> dict:
    """Expand the leaf; after failing code its thoughts see the code and the failing tests."""
    context = kit.settings(runtime, CONTEXT)
    node = state["nodes"][state["path"][-1]]
    failing = node if kit.fails_public(node.get("execution")) else None
    return expand_children(state, context, kit.chat_model(context, model), node["id"], failing)


def backpropagate(state: GvrState, runtime: Runtime[GvrContext]) -> dict:
    """Backpropagate the leaf's value (Q = max, γ per level); one rollout of the budget."""
    context = kit.settings(runtime, CONTEXT)
    leaf = state["path"][-1]
    updates = search.backpropagate(state["nodes"], leaf, state["nodes"][leaf]["value"], gamma=context.gvr_gamma)
    rollouts = state["rollouts"] + 1
    kit.emit("backpropagated", node=leaf, value=round(state["nodes"][leaf]["value"], 4), rollout=rollouts)
    stop = None
    if rollouts >= context.gvr_rollouts:
        stop = "budget_exhausted"
    elif kit.steps_left(state) < 5:  # select, simulate, expand, backpropagate, finalize
        stop = kit.STEP_LIMIT
    return {"nodes": updates, "rollouts": rollouts, "stop": stop}


def finalize(state: GvrState) -> dict:
    """Return the highest-valued program of the search."""
    return mcts.finish_best(state, best_program(state["programs"]))


# --- wiring ---------------------------------------------------------------------------------------------

def after_simulate(state: GvrState, runtime: Runtime[GvrContext]) -> str:
    """Verify failing code while refinements are left (and steps for them); else expand."""
    node = state["nodes"][state["path"][-1]]
    room = kit.steps_left(state) >= 6  # verify, refine, simulate, expand, backpropagate, finalize
    return "verify" if room and may_refine(node, state.get("refines", 0), kit.settings(runtime, CONTEXT)) \
        else "expand"


def graph_builder(model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled GVR-MCTS graph; ``model`` replaces the context's model."""
    builder = kit.builder(STATE, CONTEXT)
    kit.add_nodes(builder, {"start": kit.starter(FRESH, recursion_limit, CONTEXT, roles), "expand_root": expand_root,
                            "select": select, "simulate": simulate, "verify": verify_node, "refine": refine,
                            "expand": expand, "backpropagate": backpropagate, "finalize": finalize}, model)
    builder.add_edge(START, "start")
    builder.add_edge("start", "expand_root")
    builder.add_edge("expand_root", "select")
    builder.add_conditional_edges("select", lambda s: "finalize" if s["stop"] or s["path"][-1] == ROOT else "simulate",
                                  ["simulate", "finalize"])
    builder.add_conditional_edges("simulate", after_simulate, ["verify", "expand"])
    builder.add_conditional_edges("verify", lambda s: "refine" if s["flagged"] else "expand", ["refine", "expand"])
    builder.add_edge("refine", "simulate")
    builder.add_edge("expand", "backpropagate")
    builder.add_conditional_edges("backpropagate", lambda s: "finalize" if s["stop"] else "select",
                                  ["select", "finalize"])
    selection.add_selection(builder, model)
    return builder


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "gvr"):
    """Compile GVR-MCTS; ``model`` overrides the context's model (library use, tests)."""
    return graph_builder(model).compile(checkpointer=checkpointer, name=name)


graph = build_graph()
