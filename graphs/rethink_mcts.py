"""RethinkMCTS (2024): MCTS over thoughts with dual evaluation, block-level verbal feedback and rethink.

    START -> expand_root -> select --(a leaf)--> simulate --(fails, may rethink)--> rethink -> simulate
                              ^        \\--(no leaf)--> finalize      \\--> expand -> backpropagate
                              \\----------------------(rollouts left)------------------/   \\--> finalize

Per rollout (the released code's order, SPEC 1.9): P-UCB selection reaches an unevaluated thought;
its code is generated from the problem and the thoughts on the path, run on the public tests and
rewarded (v_test, or a·v_test + b·v_llm when every public test passes); a failing node may rethink
its own thought once and be re-evaluated; the node is expanded (with verbal feedback when it
failed) and the reward is backpropagated (Q = max). The final program is the highest-rewarded of
all programs generated, ties to the earliest.
"""

from __future__ import annotations

import functools
import operator
from typing import Annotated

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from codeforest.agents import critic, rethink, solver, thinker
from codeforest.agents.base import emit, prompt_for, resolve_model
from codeforest.context import Context
from codeforest.graphs import search
from codeforest.graphs.common import context_of, run_node_tests
from codeforest.graphs.state import SearchInput, SearchOutput, SearchState, add_cost, merge_nodes
from codeforest.problems import public_suite
from codeforest.tools.testing import ExecutionResult
from codeforest.tools.tracing import failing_test_trace

BUDGET_UNIT = "rollouts"
ROOT = "root"
MAX_FAILING_TESTS = 6  # the released code lists at most 6 failing tests in the verbal feedback


def budget(context: Context) -> int:
    """RethinkMCTS's budget in its unit: rollouts."""
    return context.rethink_rollouts


class RethinkState(SearchState, total=False):
    """The common state plus the rollout's path and every program generated with its reward."""

    path: list[str]
    rollouts: int
    programs: Annotated[list[dict], operator.add]
    batch: Annotated[list[dict], add_or_clear]  # children evaluated concurrently, awaiting backpropagation


def add_or_clear(left: list | None, right: list | None) -> list:
    """Append, or empty the list when the update is None (the join consumed the batch)."""
    return [] if right is None else (left or []) + right


def thoughts_text(nodes: dict, path: list[str]) -> str:
    """The thoughts along a path, as the prompts show them."""
    return "\n".join(nodes[i]["text"] for i in path if i != ROOT and nodes[i].get("text", "").strip())


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "rethink_mcts"):
    """Compile RethinkMCTS; ``model`` overrides the context's model (library use, tests)."""

    def llm(context: Context) -> BaseChatModel:
        return resolve_model(context, model)

    def expand_children(state: RethinkState, context: Context, parent_id: str, feedback: str | None) -> dict:
        nodes = state["nodes"]
        base = max(n.get("order", 0) for n in nodes.values()) + 1 + state.get("id_offset", 0)
        parent = nodes[parent_id]
        path = search.path_to(nodes, parent_id)
        ideas = thinker.thoughts(llm(context), prompt_for(context, "thinker_mcts"), state["problem"],
                                 previous=thoughts_text(nodes, path), width=context.rethink_width,
                                 code=parent.get("code") if feedback is not None else None, feedback=feedback,
                                 structured=context.structured_output)
        children = {}
        for i, (text, prior) in enumerate(ideas.items):
            node_id = f"n{base + i}"
            children[node_id] = {"id": node_id, "parent": parent_id, "depth": parent.get("depth", 0) + 1,
                                 "kind": "thought", "text": text, "prior": prior, "visits": 0, "q": 0.0,
                                 "status": "open", "order": base + i, "rethinks": 0}
            emit("node_created", node=node_id, parent=parent_id, depth=children[node_id]["depth"], text=text,
                 prior=prior)
        return {"nodes": children, "cost": ideas.cost}

    def expand_root(state: RethinkState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        root = {ROOT: {"id": ROOT, "parent": None, "depth": 0, "kind": "root", "text": "", "visits": 0, "q": 0.0,
                       "status": "open", "order": 0}}
        update = expand_children({**state, "nodes": root}, context, ROOT, None)
        return {"nodes": {**root, **update["nodes"]}, "cost": update["cost"], "rollouts": 0}

    def select(state: RethinkState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        path = search.select_leaf(state["nodes"], ROOT, "p_ucb", context.rethink_c_base, context.rethink_c)
        emit("selected", node=path[-1], path=path)
        return {"path": path}

    def simulate(state: RethinkState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        nodes, problem = state["nodes"], state["problem"]
        leaf = state["path"][-1]
        thoughts = thoughts_text(nodes, state["path"])
        reply = solver.write_code(llm(context), prompt_for(context, "solver"), problem, thoughts=thoughts)
        cost = [{**reply.cost, "programs": 1, "sandbox_runs": 1}]
        result, tested = run_node_tests(problem, reply.code, context, leaf)
        v_test = result.pass_rate if result.total else 1.0
        record = {**tested, "code": reply.code, "status": "passed" if v_test == 1.0 else "failed",
                  "verbal_feedback": ""}
        reward = v_test
        if v_test == 1.0 and context.rethink_self_eval:
            judged = critic.self_evaluate(llm(context), prompt_for(context, "critic_mcts"), problem,
                                          thoughts=thoughts, code=reply.code, structured=context.structured_output)
            cost.append(judged.cost)
            record["v_llm"] = float(judged.value)
            reward = context.rethink_reward_a * v_test + context.rethink_reward_b * float(judged.value)
            emit("verdict", node=leaf, v_llm=judged.value)
        elif v_test < 1.0 and context.rethink_verbal_feedback:
            record["verbal_feedback"] = verbal_feedback(problem, reply.code, result, context, llm(context), cost)
        record["reward"] = reward
        emit("reward", node=leaf, reward=round(reward, 4))
        program = {"node": leaf, "code": reply.code, "reward": reward, "v_test": v_test,
                   "rethought": nodes[leaf].get("rethinks", 0) > 0}
        return {"nodes": {leaf: record}, "cost": functools.reduce(add_cost, cost), "programs": [program]}

    def after_simulate(state: RethinkState, runtime: Runtime[Context]) -> str:
        context = context_of(runtime)
        node = state["nodes"][state["path"][-1]]
        can_rethink = context.rethink_rethink and node.get("rethinks", 0) < context.rethink_max_rethinks
        return "rethink" if node["execution"]["pass_rate"] < 1.0 and node["execution"]["total"] and can_rethink \
            else "expand"

    def rethink_node(state: RethinkState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        nodes = state["nodes"]
        leaf = state["path"][-1]
        node = nodes[leaf]
        feedback = node.get("verbal_feedback") or node.get("feedback", "")
        text, cost = rethink.rethink(llm(context), prompt_for(context, "rethink"), state["problem"],
                                     thoughts=thoughts_text(nodes, state["path"]), code=node["code"],
                                     feedback=feedback)
        emit("rethink", node=leaf, old=node["text"], new=text)
        return {"nodes": {leaf: {"text": text, "prior": 1.0, "rethinks": node.get("rethinks", 0) + 1,
                                 "replaced_thought": node["text"]}}, "cost": cost}

    def expand(state: RethinkState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        node = state["nodes"][state["path"][-1]]
        failed = node["execution"]["pass_rate"] < 1.0
        feedback = None
        if failed and context.rethink_verbal_feedback:
            feedback = node.get("verbal_feedback") or node.get("feedback", "")
        return expand_children(state, context, node["id"], feedback)

    def backpropagate(state: RethinkState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        leaf = state["path"][-1]
        reward = state["nodes"][leaf]["reward"]
        updates = search.backpropagate(state["nodes"], leaf, reward, gamma=context.rethink_gamma)
        rollouts = state.get("rollouts", 0) + 1
        emit("backpropagated", node=leaf, reward=round(reward, 4), rollout=rollouts)
        return {"nodes": updates, "rollouts": rollouts}

    def simulate_branch(payload: dict, runtime: Runtime[Context]) -> dict:
        """One new child evaluated on its own (Send): simulate, rethink if it may, expand."""
        local = dict(payload)
        updates: dict = {"nodes": {}, "cost": {}, "programs": []}

        def apply(update: dict) -> None:
            local["nodes"] = merge_nodes(local["nodes"], update.get("nodes"))
            updates["nodes"] = merge_nodes(updates["nodes"], update.get("nodes"))
            updates["cost"] = add_cost(updates["cost"], update.get("cost"))
            updates["programs"] += update.get("programs", [])

        apply(simulate(local, runtime))
        while after_simulate(local, runtime) == "rethink":
            apply(rethink_node(local, runtime))
            apply(simulate(local, runtime))
        apply(expand(local, runtime))
        leaf = local["path"][-1]
        return {**updates, "batch": [{"node": leaf, "reward": local["nodes"][leaf]["reward"]}]}

    def join(state: RethinkState, runtime: Runtime[Context]) -> dict:
        """Backpropagate the batch, one child after the other; each counts as a rollout."""
        context = context_of(runtime)
        nodes = dict(state["nodes"])
        updates: dict = {}
        for item in state.get("batch", []):
            step = search.backpropagate(nodes, item["node"], item["reward"], gamma=context.rethink_gamma)
            nodes = merge_nodes(nodes, step)
            updates = merge_nodes(updates, step)
            emit("backpropagated", node=item["node"], reward=round(item["reward"], 4))
        return {"nodes": updates, "rollouts": state["rollouts"] + len(state.get("batch", [])), "batch": None}

    def after_backpropagate(state: RethinkState, runtime: Runtime[Context]):
        context = context_of(runtime)
        left = context.rethink_rollouts - state["rollouts"]
        if left <= 0:
            return "finalize"
        if context.rethink_concurrency > 1:
            leaf = state["path"][-1]
            fresh = [c["id"] for c in search.children(state["nodes"], leaf) if "reward" not in c]
            fresh = fresh[:min(context.rethink_concurrency, left)]
            if len(fresh) > 1:  # evaluate the new children at once; the endpoint serves them in parallel
                path = search.path_to(state["nodes"], leaf)
                return [Send("simulate_branch", {"problem": state["problem"], "nodes": state["nodes"],
                                                 "path": [*path, child], "id_offset": j * context.rethink_width})
                        for j, child in enumerate(fresh)]
        return "select"

    def finalize(state: RethinkState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        best = best_program(state.get("programs", []))
        reason = "budget_exhausted" if state.get("rollouts", 0) >= context.rethink_rollouts else "tree_exhausted"
        emit("finished", node=best and best["node"], stop_reason=reason)
        if best is None:
            return {"final_code": "", "final_node": None, "stop_reason": reason, "public_pass_rate": 0.0}
        return {"final_code": best["code"], "final_node": best["node"], "stop_reason": reason,
                "public_pass_rate": best["v_test"]}

    builder = StateGraph(RethinkState, context_schema=Context, input_schema=SearchInput, output_schema=SearchOutput)
    for node_name, fn in (("expand_root", expand_root), ("select", select), ("simulate", simulate),
                          ("rethink", rethink_node), ("expand", expand), ("backpropagate", backpropagate),
                          ("finalize", finalize)):
        builder.add_node(node_name, fn)
    builder.add_edge(START, "expand_root")
    builder.add_edge("expand_root", "select")
    builder.add_conditional_edges("select", lambda s: "finalize" if s["path"][-1] == ROOT else "simulate",
                                  ["simulate", "finalize"])
    builder.add_conditional_edges("simulate", after_simulate, ["rethink", "expand"])
    builder.add_edge("rethink", "simulate")
    builder.add_edge("expand", "backpropagate")
    builder.add_node("simulate_branch", simulate_branch)
    builder.add_node("join", join)
    builder.add_conditional_edges("backpropagate", after_backpropagate, ["select", "finalize", "simulate_branch"])
    builder.add_edge("simulate_branch", "join")
    builder.add_conditional_edges("join", after_backpropagate, ["select", "finalize", "simulate_branch"])
    builder.add_edge("finalize", END)
    return builder.compile(checkpointer=checkpointer, name=name).with_config(recursion_limit=10_000)


def best_program(programs: list[dict]) -> dict | None:
    """The highest-rewarded program (the first reward seen for a code string counts); ties to the earliest."""
    seen: dict[str, dict] = {}
    for program in programs:
        seen.setdefault(program["code"], program)
    best = None
    for program in seen.values():
        if best is None or program["reward"] > best["reward"]:
            best = program
    return best


def verbal_feedback(problem, code: str, result: ExecutionResult, context: Context, model: BaseChatModel,
                    cost: list[dict]) -> str:
    """Failing tests with their outputs, plus the block-level trace and its analysis (RethinkMCTS App. B.5)."""
    failing = [o for o in result.outcomes if not o.passed][:MAX_FAILING_TESTS]
    lines = ["(Execution Feedback)", "The code above fails the given unit test:"]
    for outcome in failing:
        shown = "Timed out" if outcome.timed_out else (outcome.actual if outcome.actual is not None else outcome.error)
        lines.append(f"{outcome.test.strip()} # Current Execution Output: {shown}")
    text = "\n".join(lines)
    if not context.rethink_block_info or not failing:
        return text
    trace, index = failing_test_trace(code, public_suite(problem), result, backend=context.sandbox)
    if index is None:
        return f"{text}\n{trace}"
    outcome = result.outcomes[index]
    shown = outcome.actual if outcome.actual is not None else outcome.error
    analysis, call_cost = critic.analyze_blocks(model, prompt_for(context, "critic_mcts"), problem, code=code,
                                                test=outcome.test.strip(), output=str(shown), trace=trace,
                                                structured=context.structured_output)
    cost.append(call_cost)
    return f"{text}\n(Block-level Analysis)\n{trace}\n{analysis}"


graph = build_graph()
