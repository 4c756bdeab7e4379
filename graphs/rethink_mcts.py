"""RethinkMCTS (2024): MCTS over thoughts with dual evaluation, block-level verbal feedback and rethink.

    START -> start -> expand_root -> select --(a leaf)--> rollout -> backpropagate --(rollouts left)--> select
                                       \\--(none / no steps)--> finalize      \\--(concurrency > 1)--Send--> rollout
    rollout (a subgraph): simulate --(fails, may rethink)--> rethink -> simulate
                                   \\--> expand

Per rollout (the released code's order, SPEC 1.9): P-UCB selection reaches an unevaluated thought;
its code is generated from the problem and the thoughts on the path, run on the public tests and
rewarded (v_test, or a·v_test + b·v_llm when every public test passes); a failing node may rethink
its own thought once and be re-evaluated; the node is expanded (with verbal feedback when it
failed) and the reward is backpropagated (Q = max). The final program is the highest-rewarded of
all programs generated, ties to the earliest. With ``rethink_concurrency`` N > 1, up to N new
children of an expansion run the same rollout subgraph at once (``Send``). A problem without public
tests gives v_test = 1.0 (every one of its zero tests passes), so self-evaluation decides and no
expansion is given feedback.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send
from pydantic import Field, model_validator
from typing_extensions import TypedDict

from codeforest.agents import critic, rethink, solver, thinker
from codeforest.agents.base import Reply
from codeforest.agents.verifier import thoughts_state, verify
from codeforest.context import ThoughtTreeContext
from codeforest.cost import Cost, add_cost, total_cost
from codeforest.graphs import codeprm, kit, mcts, search, selection
from codeforest.graphs.state import NodeRecord, SearchState, merge_nodes
from codeforest.problems import Problem
from codeforest.suites import ExecutionResult, TestOutcome
from codeforest.tools import ldb
from codeforest.tools.released_exec import (
    RELEASED_JOIN_S,
    RETHINK_LABEL,
    judged_as_released,
    unfinished_in_join,
)
from codeforest.tools.testing import current_output, execution_report, is_stdin_test, prm_feedback, shown_test

BUDGET_UNIT = "rollouts"
ROOT = kit.ROOT
MAX_FAILING_TESTS = 6  # the released code lists at most 6 failing tests in the verbal feedback
CHARS_PER_TOKEN = 4  # the released code counts tiktoken tokens; characters / 4 approximates them
TEST_LIMIT = 2048 * CHARS_PER_TOKEN  # ... each failing test cut to 2048 tokens
FEEDBACK_LIMIT, FEEDBACK_CUT = 12000 * CHARS_PER_TOKEN, 8000 * CHARS_PER_TOKEN  # over 12000 tokens: cut to 8000
NO_VERBAL = "The code generated following the thoughts doesn't pass some test cases."  # RethinkMCTSNoVerb's
RELEASED_NO_VERBAL = ("Above is the combination of problem + thoughts & reflections + code. The code is generated "
                      "following the thoughts to solve the problem. However, the code generated following the "
                      "thoughts doesn't pass some test cases.")
RELEASED_FEEDBACK = f"{RELEASED_NO_VERBAL} Here are the test cases the code doesn't pass: \n"
TIMED_OUT = "Timed out"
RELEASED_BLOCKS = ("And here is one specific debug information of one failed test case. The code is divided into "
                   "blocks and the analysis of the mistaken block is given:")


class RethinkContext(ThoughtTreeContext):
    """RethinkMCTS's settings (SPEC-rethinkmcts-rpm-mcts.md Part 1): the paper's defaults, released-code options."""

    rethink_rollouts: int = Field(default=16, ge=1, description="RethinkMCTS budget: rollouts (16).")
    rethink_width: int = Field(default=3, ge=1, description="RethinkMCTS children per expansion (3).")
    rethink_c_base: float = Field(default=10.0, gt=0, description="P-UCB c_base (10, from PG-TD).")
    rethink_c: float = Field(default=4.0, ge=0, description="P-UCB exploration weight c (4).")
    rethink_reward_a: float = Field(default=0.8, ge=0, le=1, description="Reward weight a of v_test (0.8).")
    rethink_reward_b: float = Field(default=0.2, ge=0, le=1, description="Reward weight b of v_llm (0.2).")
    rethink_gamma: float = Field(default=1.0, gt=0, le=1, description=(
        "Discount per level in backpropagation, the leaf's own edge included: 1.0 (the paper), 0.9 (the released "
        "code)."))
    rethink_max_rethinks: int = Field(default=1, ge=0, description="Rethinks per node (the released code: 1).")
    rethink_concurrency: int = Field(default=1, ge=1, description=(
        "1: one rollout at a time (the paper). N > 1: after an expansion, up to N of the new children are "
        "evaluated at once (Send), each counting as a rollout; the embedded server gets N parallel slots."))
    rethink_rethink: bool = Field(default=True, description="Ablation: false = w/o rethink.")
    rethink_verbal_feedback: bool = Field(default=True, description=(
        "Ablation: false = w/o verbal feedback (the released NoVerb: the rethink is told only that the code "
        "fails some tests; expansions get no feedback)."))
    rethink_feedback_layout: Literal["paper", "released"] = Field(default="paper", description=(
        "How the verbal feedback is written and shown: the paper's App. B.4/B.5 (the expansion and the rethink "
        "show problem, thoughts and code, then '(Execution Feedback)' and '(Block-level Analysis)', then the "
        "instruction), or the released code's (one text 'Above is the combination of problem + thoughts & "
        "reflections + code ...' with '## Failed test i' entries and the trace under '# Trace blocks debugging', "
        "placed before the expansion's instruction and after the rethink's). On a function problem the released "
        "layout also judges the reply as that executor reads it (its first python block, after its 16 import "
        "lines), shows each failing assert as the released executor reports it (run again in its harness in "
        "the sandbox: the value returned as str() writes it, an error as its frames); its tests share 10 s, as that "
        "executor waits 10 s for them all, and a run it would have stopped waiting for (a test out of time, or all "
        "of them past 10 s) reads as its 21 'No result got!' failures with v_test 0."))
    rethink_block_info: bool = Field(default=True, description=(
        "Ablation: false = verbal feedback without the block-level analysis."))
    rethink_block_trace: Literal["codeforest", "released"] = Field(default="codeforest", description=(
        "The block-level analysis: codeforest's (its block split of a line trace taken in the sandbox, one "
        "request) or the released code's LDB (staticfg's blocks, `python -m trace` and a value-printing run in the "
        "sandbox, the failing tests tried in turn until one traces, a four-message chat with its stop strings and "
        "no output limit; function problems only, standard-input ones keep codeforest's)."))
    rethink_self_eval: bool = Field(default=True, description=(
        "Ablation: false = w/o self-evaluation (reward = v_test)."))
    rethink_eval_clamp: bool = Field(default=True, description=(
        "Clamp the self-evaluation to the [-1, 1] it is asked for; false: the first number of the reply as "
        "written, as the released code uses it (an answer of 1.5 then rewards 0.8 + 0.2 x 1.5 = 1.1)."))
    rethink_evaluator: Literal["self_eval", "verifier"] = Field(default="self_eval", description=(
        "Who judges a program passing every public test: the paper's self-evaluation in [-1, 1], or the "
        "Verifier (CodePRM), its mean step score s giving v_llm = 2s - 1."))
    rethink_locate: Literal["leaf", "verifier"] = Field(default="leaf", description=(
        "Which thought a failing program's rethink rewrites: the leaf's (the paper), or the one the Verifier "
        "scores lowest on the path (CodePRM's locate-min, rewritten with its refine prompt)."))

    @model_validator(mode="after")
    def _layout_fits_the_locator(self) -> RethinkContext:
        if self.rethink_locate == "verifier" and self.rethink_feedback_layout == "released":
            raise ValueError("rethink_feedback_layout='released' writes problem, thoughts and code into the feedback, "
                             "and rethink_locate='verifier' shows them again: use the paper layout with the Verifier")
        if self.rethink_locate == "verifier" and self.rethink_concurrency > 1:
            raise ValueError("rethink_locate='verifier' may rewrite a thought that sibling rollouts share, and "
                             "rollouts running at once would rewrite it over each other: use rethink_concurrency=1")
        return self

    def slots_needed(self) -> int:
        """Concurrent rollouts need as many server slots."""
        return max(self.server_slots, self.rethink_concurrency)


CONTEXT = RethinkContext


def add_or_clear(left: list | None, right: list | None) -> list:
    """Append, or empty the list when the update is None (backpropagation consumed the batch)."""
    return [] if right is None else (left or []) + right


class RethinkState(SearchState, total=False):
    """The common state plus the rollout's path and every program generated with its reward."""

    path: list[str]
    rollouts: int
    programs: Annotated[list[dict], operator.add]  # {node, code, reward, v_test, execution, rethought}
    batch: Annotated[list[dict], add_or_clear]  # finished rollouts awaiting backpropagation: {node, reward}
    stop: str | None


class RolloutState(TypedDict, total=False):
    """One rollout: the tree, the path to the leaf it evaluates, and what it spends and writes."""

    problem: Problem
    nodes: Annotated[dict[str, NodeRecord], merge_nodes]
    path: list[str]
    id_offset: int  # keeps the ids of concurrent rollouts' children apart
    cost: Annotated[Cost, add_cost]
    programs: Annotated[list[dict], operator.add]
    model_error: str | None  # a model call failed for good (or the token budget is spent): the rollout ends
    spent_before: Cost  # what the search had spent before this rollout (for the token and cost budgets)


STATE = RethinkState
FRESH = {"path": [], "rollouts": 0, "programs": Overwrite([]), "batch": Overwrite([]), "stop": None}


def roles(context: RethinkContext) -> set[str]:
    """The roles this graph calls under these settings: the Critic for the self-evaluation and the block analysis,
    the LLM verifier where it evaluates or locates, Rethink, and the selector's."""
    rethinks = context.rethink_rethink and context.rethink_max_rethinks >= 1
    called = {"thinker", "solver"} | ({"rethink"} if rethinks else set())
    self_eval = context.rethink_self_eval and context.rethink_evaluator == "self_eval"
    if self_eval or (context.rethink_verbal_feedback and context.rethink_block_info):
        called.add("critic")
    verified = context.rethink_self_eval and context.rethink_evaluator == "verifier"
    if context.verifier == "llm" and (verified or (rethinks and context.rethink_locate == "verifier")):
        called.add("verifier")
    return kit.roles_called(context, called, choices=context.rethink_rollouts >= 2 or rethinks)


def budget(context: RethinkContext) -> int:
    """RethinkMCTS's budget in its unit: rollouts."""
    return context.rethink_rollouts


def recursion_limit(context: RethinkContext) -> int:
    """Steps of the longest run: start, expand_root, three per rollout (select, rollout, backpropagate), finalize."""
    return kit.recursion_limit(3 * context.rethink_rollouts + 3)


# --- decision rules (pure) --------------------------------------------------------------------------

def thoughts_text(nodes: dict, path: list[str], released: bool = False) -> str:
    """The thoughts along a path, as the prompts show them: one ``Thought: ...`` line each, the label the released
    state gives every thought (unlabelled, they read on as part of the problem statement); ``released``: the
    released state after the problem, less its first line break."""
    if released:
        return search.state_text(nodes, path, released=True)[1:]
    return "\n".join(f"Thought: {t.strip()}" for t in search.thoughts_on(nodes, path))


def rethought_action(raw: str) -> str:
    """What a rethink adds to the released state: the reply as written between line breaks (``Thought: `` put
    before a reply without ``Thought:``)."""
    return "\n" + (raw if "Thought:" in raw else f"Thought: {raw}") + "\n"


def reward(v_test: float, v_llm: float | None, context: RethinkContext) -> float:
    """v_test, or a·v_test + b·v_llm when every public test passes and the program was self-evaluated."""
    return v_test if v_llm is None else context.rethink_reward_a * v_test + context.rethink_reward_b * v_llm


def may_rethink(node: NodeRecord, context: RethinkContext) -> bool:
    """A node whose program fails a public test rethinks its thought while it has rethinks left."""
    return kit.fails_public(node["execution"]) and context.rethink_rethink \
        and node.get("rethinks", 0) < context.rethink_max_rethinks


def best_program(programs: list[dict]) -> dict | None:
    """The highest-rewarded program (the first reward seen for a code string counts); ties to the earliest."""
    return mcts.best_program(programs, "reward")


def concurrent_children(nodes: dict[str, NodeRecord], leaf: str, concurrency: int, left: int) -> list[str]:
    """The new children of ``leaf`` to evaluate at once: up to ``concurrency`` and the rollouts left."""
    fresh = [c["id"] for c in search.children(nodes, leaf) if "reward" not in c]
    return fresh[:min(concurrency, left)]


# --- the rollout subgraph's nodes ---------------------------------------------------------------------

def expand_children(state: dict, context: RethinkContext, model: BaseChatModel, parent_id: str,
                    feedback: str | None) -> dict:
    """The Thinker's next thoughts (with priors) below ``parent_id``; failing parents pass on feedback."""
    nodes, released = state["nodes"], context.released_text
    parent, path = nodes[parent_id], search.path_to(nodes, parent_id)
    previous = search.state_text(nodes, path, released=True) if released else thoughts_text(nodes, path)
    ideas = thinker.thoughts(model, kit.prompt(context, "thinker_mcts"), state["problem"], previous=previous,
                             width=context.rethink_width,
                             code=kit.shown_code(parent, context.code_shown) if feedback is not None else None,
                             feedback=feedback, structured=context.structured_output,
                             feedback_key=f"expand_with_feedback{released_suffix(context)}",
                             released="rethink" if released else None)
    actions = None
    if released:  # a blank fallback adds its line break alone
        actions = [search.released_action(t) if ideas.parsed else t for t, _ in ideas.value]
    base = kit.next_order(nodes) + state.get("id_offset", 0)
    return {"nodes": mcts.thought_children(nodes, parent_id, ideas.value, base, actions, rethinks=0),
            "cost": ideas.cost}


def simulate(state: RolloutState, runtime: Runtime[RethinkContext], model: BaseChatModel | None = None) -> dict:
    """Write the leaf's program from the path's thoughts, run it, reward it (and explain a failure)."""
    context = kit.settings(runtime, CONTEXT)
    llm = kit.chat_model(context, model)
    nodes, problem, leaf = state["nodes"], state["problem"], state["path"][-1]
    thoughts = search.state_text(nodes, state["path"], context.released_text)
    reply = solver.write_code(llm, kit.prompt(context, "solver_mcts"), problem, thoughts=thoughts)
    costs = [{**reply.cost, **kit.PROGRAM_RUN}]
    released_join = released_harness(problem, context)
    result, record = kit.run_program(problem, reply.value, context, leaf,
                                     budget=RELEASED_JOIN_S if released_join else None,
                                     judged=judged_as_released(reply.raw) if released_join else None)
    record.update(kit.kept_reply(reply.raw, context.code_shown))
    shown = kit.shown_code(record, context.code_shown)
    v_test = result.pass_rate if result.total else 1.0
    failed_texts = released_failed_tests(problem, reply.raw, result, context) if released_join else None
    if failed_texts and unfinished_in_join(result):
        v_test = 0.0
    record["verbal_feedback"], v_llm = "", None
    if context.rethink_locate == "verifier":  # the Verifier reads test results in CodePRM's format
        record["prm_feedback"] = prm_feedback(result)

    def rewarded() -> dict:
        record["reward"] = reward(v_test, v_llm, context)
        program = {"node": leaf, "code": reply.value, "reward": record["reward"], "v_test": v_test,
                   "execution": record["execution"], "rethought": nodes[leaf].get("rethinks", 0) > 0}
        return {"nodes": {leaf: dict(record)}, "programs": [program]}

    kit.keep({**rewarded(), "cost": kit.PROGRAM_RUN})  # valued by its tests alone if a later call fails
    if v_test == 1.0 and context.rethink_self_eval:
        judged = self_evaluation(state, context, llm, shown, prm_feedback(result))
        costs.append(judged.cost)
        record["v_llm"] = v_llm = float(judged.value)
        kit.emit("verdict", node=leaf, v_llm=judged.value)
    elif v_test < 1.0 and context.rethink_verbal_feedback:
        record["verbal_feedback"] = verbal_feedback(problem, reply.value, result, context, llm, costs,
                                                    thoughts=search.state_text(nodes, state["path"],
                                                                               context.released_text),
                                                    shown=shown, failed_texts=failed_texts)
    update = rewarded()
    kit.emit("reward", node=leaf, reward=round(record["reward"], 4))
    return {**update, "cost": total_cost(costs)}


def self_evaluation(state: RolloutState, context: RethinkContext, llm: BaseChatModel, code: str, feedback: str):
    """v_llm of a program passing every public test: the self-evaluation, or 2·(mean Verifier step score) - 1."""
    nodes, path, problem = state["nodes"], state["path"], state["problem"]
    if context.rethink_evaluator == "verifier":
        thoughts = search.thoughts_on(nodes, path)
        scored = verify(codeprm.verifier(context, llm), problem["prompt"], thoughts, code, feedback)
        scored.value = 2 * codeprm.aggregate(scored.value, "mean") - 1 if thoughts else 0.0
        return scored
    return critic.self_evaluate(llm, kit.prompt(context, "critic_mcts"), problem,
                                thoughts=thoughts_text(nodes, path, context.released_text), code=code,
                                structured=context.structured_output, clamp=context.rethink_eval_clamp)


def rethink_leaf(state: RolloutState, runtime: Runtime[RethinkContext], model: BaseChatModel | None = None) -> dict:
    """Rewrite a thought of the failing leaf's path in place from its feedback: the leaf's own (the paper), or
    the one the Verifier scores lowest (``rethink_locate='verifier'``). The rewritten thought gets prior 1.0."""
    context = kit.settings(runtime, CONTEXT)
    llm, nodes, leaf = kit.chat_model(context, model), state["nodes"], state["path"][-1]
    node = nodes[leaf]
    if context.rethink_verbal_feedback:
        feedback = node.get("verbal_feedback") or node.get("feedback", "")
    elif context.rethink_feedback_layout == "released":  # the released NoVerb's text: no test, no trace
        shown = released_state(state["problem"], nodes, state["path"], context)
        feedback = f"{shown}\n\n {kit.shown_code(node, context.code_shown)}\n\n{RELEASED_NO_VERBAL}"
    else:
        feedback = NO_VERBAL
    costs, target = [], leaf
    if context.rethink_locate == "verifier":
        ids = search.thought_ids(nodes, state["path"])
        thoughts = [nodes[i]["text"] for i in ids]
        shown = thoughts_state(state["problem"]["prompt"], thoughts)
        positions, scores, cost = codeprm.flawed_thoughts("locate_min", context, llm, state["problem"]["prompt"],
                                                      thoughts, node["code"], node.get("prm_feedback", feedback),
                                                      shown=shown,
                                                      key=f"{state['problem']['id']}:{leaf}:{node.get('rethinks', 0)}")
        costs.append(cost)
        target = ids[positions[0]] if positions else leaf
        kit.emit("verified", node=leaf, scores=[round(s, 3) for s in scores or []], flagged=[target])
        reply = rethink.refine(llm, kit.prompt(context, "rethink_gvr"), state=shown, code=node["code"],
                               feedback=feedback, refine_id=ids.index(target) + 1 if target in ids else len(ids))
    else:
        reply = rethink.rethink(llm, kit.prompt(context, "rethink"), state["problem"],
                                thoughts=thoughts_text(nodes, state["path"], context.released_text),
                                code=kit.shown_code(node, context.code_shown), feedback=feedback,
                                key=f"user{released_suffix(context)}")
    costs.append(reply.cost)
    old = nodes[target]["text"]
    updates = {leaf: {"rethinks": node.get("rethinks", 0) + 1}}
    released = context.released_text and context.rethink_locate == "leaf"
    if reply.value or released:  # an empty rewrite would drop the thought out of every prompt: the thought stays
        kit.emit("rethink", node=target, old=old, new=reply.value)
        updates[target] = {**updates.get(target, {}), "text": reply.value or old, "prior": 1.0,
                           "replaced_thought": old}
        if released:  # the released state keeps the reply as written
            updates[target]["action"] = rethought_action(reply.raw)
    return {"nodes": updates, "cost": total_cost(costs)}


def expand(state: RolloutState, runtime: Runtime[RethinkContext], model: BaseChatModel | None = None) -> dict:
    """Expand the leaf; a failing leaf's thoughts see its verbal feedback."""
    context = kit.settings(runtime, CONTEXT)
    node = state["nodes"][state["path"][-1]]
    feedback = None
    if kit.fails_public(node["execution"]) and context.rethink_verbal_feedback:
        feedback = node.get("verbal_feedback") or node.get("feedback", "")
    return expand_children(state, context, kit.chat_model(context, model), node["id"], feedback)


def rollout_builder(model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled rollout subgraph: simulate, rethink while allowed, expand."""
    builder = StateGraph(RolloutState, context_schema=CONTEXT)
    kit.add_nodes(builder, {"simulate": simulate, "rethink": rethink_leaf, "expand": expand}, model,
                  on_model_fault=END)
    builder.add_edge(START, "simulate")
    builder.add_conditional_edges("simulate", lambda s, runtime: "rethink" if may_rethink(
        s["nodes"][s["path"][-1]], kit.settings(runtime, CONTEXT)) else "expand", ["rethink", "expand"])
    builder.add_edge("rethink", "simulate")
    builder.add_edge("expand", END)
    return builder


# --- the search's nodes ---------------------------------------------------------------------------------

def expand_root(state: RethinkState, runtime: Runtime[RethinkContext], model: BaseChatModel | None = None) -> dict:
    """The root and its first thoughts."""
    context = kit.settings(runtime, CONTEXT)
    return mcts.expand_root(state, context, kit.chat_model(context, model), expand_children)


def select(state: RethinkState, runtime: Runtime[RethinkContext]) -> dict:
    """P-UCB from the root down to a leaf; stop when too few steps are left for a rollout."""
    context = kit.settings(runtime, CONTEXT)
    path = mcts.select_path(state, context.rethink_c_base, context.rethink_c,
                            steps_needed=3)  # rollout, backpropagate, finalize
    return {"path": path} if path else {"stop": kit.STEP_LIMIT}


def rollout_node(rollout_graph: CompiledStateGraph) -> Callable:
    """The rollout node: runs the rollout subgraph on one leaf, returns what it changed."""

    def rollout(state: dict, runtime: Runtime[RethinkContext]) -> dict:
        """Simulate, rethink and expand the leaf at the end of ``path`` (the rollout subgraph)."""
        context = kit.settings(runtime, CONTEXT)
        start = {k: state[k] for k in ("problem", "nodes", "path")} | {
            "id_offset": state.get("id_offset", 0),
            "spent_before": state.get("cost") or {}}
        limit = kit.recursion_limit(2 * context.rethink_max_rethinks + 2)
        final = kit.run_inner(rollout_graph, start, {"recursion_limit": limit})
        leaf = final["nodes"][state["path"][-1]]
        changed = {i: r for i, r in final["nodes"].items() if state["nodes"].get(i) != r}
        update = {"nodes": changed, "cost": final.get("cost", {}), "programs": final.get("programs", []),
                  "batch": [{"node": leaf["id"], "reward": leaf["reward"]}] if "reward" in leaf else []}
        if final.get("model_error"):  # the rollout ended at a failed model call: the search ends too
            update["model_error"] = final["model_error"]
        return update

    return rollout


def backpropagate(state: RethinkState, runtime: Runtime[RethinkContext]) -> dict:
    """Backpropagate each finished rollout (Q = max); each counts as one rollout of the budget."""
    context = kit.settings(runtime, CONTEXT)
    nodes, updates = dict(state["nodes"]), {}
    rollouts = state["rollouts"]
    for item in state["batch"]:
        step = search.backpropagate(nodes, item["node"], item["reward"], gamma=context.rethink_gamma)
        nodes, updates = merge_nodes(nodes, step), merge_nodes(updates, step)
        rollouts += 1
        kit.emit("backpropagated", node=item["node"], reward=round(item["reward"], 4), rollout=rollouts)
    nodes_after = 3 if concurrent_children(nodes, state["path"][-1], context.rethink_concurrency, 2) else 4
    stop = None
    if rollouts >= context.rethink_rollouts:
        stop = "budget_exhausted"
    elif kit.steps_left(state) < nodes_after:  # (select,) rollout, backpropagate, finalize
        stop = kit.STEP_LIMIT
    return {"nodes": updates, "rollouts": rollouts, "batch": None, "stop": stop}


def finalize(state: RethinkState) -> dict:
    """Return the highest-rewarded program of the search."""
    return mcts.finish_best(state, best_program(state["programs"]))


# --- wiring ---------------------------------------------------------------------------------------------

def after_backpropagate(state: RethinkState, runtime: Runtime[RethinkContext]):
    """Finalize, select the next leaf, or send the expansion's new children to concurrent rollouts."""
    context = kit.settings(runtime, CONTEXT)
    if state["stop"] or kit.failed(state):
        return "finalize"
    if context.rethink_concurrency > 1:
        leaf = state["path"][-1]
        fresh = concurrent_children(state["nodes"], leaf, context.rethink_concurrency,
                                    context.rethink_rollouts - state["rollouts"])
        if len(fresh) > 1:
            path = search.path_to(state["nodes"], leaf)
            return [Send("rollout", {"problem": state["problem"], "nodes": state["nodes"], "path": [*path, child],
                                     "id_offset": j * context.rethink_width, "cost": state.get("cost", {})})
                    for j, child in enumerate(fresh)]
    return "select"


def graph_builder(model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled RethinkMCTS graph; ``model`` replaces the context's model."""
    builder = kit.builder(STATE, CONTEXT)
    kit.add_nodes(builder, {"start": kit.starter(FRESH, recursion_limit, CONTEXT, roles), "expand_root": expand_root,
                            "select": select, "rollout": rollout_node(rollout_builder(model).compile()),
                            "backpropagate": backpropagate, "finalize": finalize}, model)
    builder.add_edge(START, "start")
    builder.add_edge("start", "expand_root")
    builder.add_edge("expand_root", "select")
    builder.add_conditional_edges("select", lambda s: "finalize" if s["stop"] or s["path"][-1] == ROOT else "rollout",
                                  ["rollout", "finalize"])
    builder.add_edge("rollout", "backpropagate")
    builder.add_conditional_edges("backpropagate", after_backpropagate, ["select", "finalize", "rollout"])
    selection.add_selection(builder, model)
    return builder


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "rethink_mcts"):
    """Compile RethinkMCTS; ``model`` overrides the context's model (library use, tests)."""
    return graph_builder(model).compile(checkpointer=checkpointer, name=name)


def released_suffix(context: RethinkContext) -> str:
    """The templates of the released feedback layout end in ``_released``."""
    return "_released" if context.rethink_feedback_layout == "released" else ""


def verbal_feedback(problem: Problem, code: str, result: ExecutionResult, context: RethinkContext,
                    model: BaseChatModel, costs: list[dict], thoughts: str = "", shown: str | None = None,
                    failed_texts: list[str] | None = None) -> str:
    """Failing tests with their outputs, plus the block-level trace and its analysis: App. B.5's layout, or
    the released code's (which also holds the problem, the ``thoughts`` as the state holds them, the code
    as ``shown``, and the failing tests as ``failed_texts`` when the released executor's texts are given)."""
    failing = [o for o in result.outcomes if not o.passed][:MAX_FAILING_TESTS]
    released = context.rethink_feedback_layout == "released"
    shown = code if shown is None else shown
    if failed_texts is None:
        failed_texts = [released_failure(o) for o in failing]
    failed_texts = [text[:TEST_LIMIT] for text in failed_texts[:MAX_FAILING_TESTS]]
    if released:
        tests = "".join(f"\n\n## Failed test {i}: {text}" for i, text in enumerate(failed_texts, 1))
        text = f"{problem['prompt']}{thoughts}\n\n{shown}\n\n{RELEASED_FEEDBACK}{tests} \n"
    else:
        lines = ["(Execution Feedback)", "The code above fails the given unit test:"]
        lines += [paper_failure(o)[:TEST_LIMIT] for o in failing]
        text = "\n".join(lines)
    if context.rethink_block_info and failing:
        if context.rethink_block_trace == "released" and problem["kind"] == "function":
            found = ldb_analysis(problem, shown, failed_texts, thoughts, context, model)
            trace, analysis, failed = found or ("", None, "")
        else:
            trace, analysis, traced = kit.traced_failure(problem, code, result, context, model, show=block_test)
            failed = released_failure(traced)[:TEST_LIMIT] if traced is not None else ""
        if analysis is not None:
            costs.append(analysis.cost)
            if released:
                text += (f"{RELEASED_BLOCKS}\n## Failed test: \n{failed}\n# Trace blocks debugging:\n"
                         f"{trace}\n\n{analysis.value}")
            else:
                text += f"\n(Block-level Analysis)\n{trace}\n{analysis.value}"
        elif not released and trace:  # the released code adds nothing when no trace could be taken
            text = f"{text}\n{trace}"
    return text[:FEEDBACK_CUT] if len(text) > FEEDBACK_LIMIT else text


def ldb_analysis(problem: Problem, reply: str, failed_texts: list[str], thoughts: str, context: RethinkContext,
                 model: BaseChatModel) -> tuple[str, Reply, str] | None:
    """The released LDB step: the failing tests (their released texts) in turn until one can be traced
    (``tools.ldb``), then the block analysis of that one; its blocks text, the analysis and the failed test's text
    (None when none traces)."""
    program = ldb.program_of(reply)
    for failed in failed_texts:
        blocks = ldb.released_trace(program, failed, problem["entry_point"], backend=context.sandbox)
        if isinstance(blocks, list) and blocks:
            trace = ldb.blocks_text(blocks)
            analysis = critic.analyze_blocks_released(model, kit.prompt(context, "critic_mcts"),
                                                      problem=problem["prompt"], thoughts=thoughts, program=program,
                                                      failed_test=failed, trace=trace)
            return trace, analysis, failed
    return None


def released_state(problem: Problem, nodes: dict, path: list[str], context: RethinkContext) -> str:
    """The released code's state: the problem, then one ``\\nThought: ...`` line per thought (released_text: each
    as the released state holds it)."""
    return problem["prompt"] + search.state_text(nodes, path, context.released_text)


def released_harness(problem: Problem, context: RethinkContext) -> bool:
    """Whether a program's tests are judged as the released HumanEval executor judges them: a function problem under
    the released feedback layout."""
    return context.rethink_feedback_layout == "released" and problem["kind"] == "function"


def released_failed_tests(problem: Problem, reply: str, result: ExecutionResult,
                          context: RethinkContext) -> list[str]:
    """The failing tests of a function problem's program as the released HumanEval executor reports them: the first
    six failing asserts run again in the sandbox in its harness (the program is the reply's first python block), or,
    for a run that executor would have stopped waiting for, its 21 placeholders."""
    return kit.released_failed(problem, reply, result, context, label=RETHINK_LABEL, cap=MAX_FAILING_TESTS)


def released_failure(outcome: TestOutcome) -> str:
    """A failing test as the released RethinkMCTS executors report it."""
    return execution_report(outcome, current_output(outcome, TIMED_OUT), label="# Current Execution Output: \n",
                            assert_lead="\n")


def paper_failure(outcome: TestOutcome) -> str:
    """A failing test as App. B.5 shows it: the assert with its output beside it (a stdin test: its input and
    expected output, then the output on the next line)."""
    gap = "\n" if is_stdin_test(outcome) else " "
    return f"{shown_test(outcome)}{gap}# Current Execution Output: {current_output(outcome, TIMED_OUT)}"


def block_test(outcome: TestOutcome) -> str:
    """The failing test in the block-analysis prompt, whose template writes its output after it."""
    return f"{shown_test(outcome)}\n" if is_stdin_test(outcome) else shown_test(outcome)


graph = build_graph()
