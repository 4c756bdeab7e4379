"""CodeTree (Li et al., 2024): Thinker strategies -> Solver -> run -> Critic -> refine | abort | accept.

    START -> think -> pick --(a node to try)--> generate -> execute -> critique --accept--> finalize
                       ^  \\--(budget spent / tree exhausted)--> finalize     |--refine--> reflect -> pick
                       \\-------------------------------------------------- abort

Every tree node is a program with its strategy (depth 1) or reflection (deeper). The search follows
the released ``agent_guide`` (SPEC §1.4): depth-first over strategies and reflections, at most
``codetree_max_programs`` Solver/Debugger programs, depth ``codetree_max_depth``. Node value =
visible pass fraction + 5/15 when all pass + Critic score/15 (failing nodes only).
"""

from __future__ import annotations

from typing import Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from codeforest.agents import critic, debugger, solver, thinker
from codeforest.agents.base import emit, prompt_for, resolve_model
from codeforest.agents.debugger import REVIEW_MARK
from codeforest.context import Context
from codeforest.graphs.common import context_of, execute_node
from codeforest.graphs.state import NodeRecord, SearchInput, SearchOutput, SearchState, finish

BUDGET_UNIT = "programs"
PASS_BONUS = 5 / 15
PASS_THRESHOLD = 0.99  # the released code's "r > 0.99"


def budget(context: Context) -> int:
    """CodeTree's budget in its unit: generated programs."""
    return context.codetree_max_programs


class CodeTreeState(SearchState, total=False):
    """The common state plus the search frontier and the current node."""

    frontier: list[str]
    current: str | None
    decision: Literal["accept", "refine", "abort"]
    accepted: str | None
    last_failing: str | None
    stop: str


def _new_node(order: int, *, parent: NodeRecord | None, text: str, strategy: str) -> NodeRecord:
    return {"id": f"n{order + 1}", "parent": parent["id"] if parent else None,
            "depth": parent["depth"] + 1 if parent else 1, "kind": "code", "text": text, "strategy": strategy,
            "status": "open", "order": order, "value": 0.0}


def _visible_pass(node: NodeRecord) -> bool:
    return node.get("execution", {}).get("pass_rate", 0.0) > PASS_THRESHOLD


def choose_final(nodes: dict[str, NodeRecord], rule: str, last_failing: str | None) -> str | None:
    """The node whose program is returned when nothing was accepted."""
    tried = [n for n in nodes.values() if n.get("code")]
    if not tried:
        return None
    if rule == "last_failing":
        return last_failing or min(tried, key=lambda n: n["order"])["id"]
    return max(tried, key=lambda n: (n.get("value", 0.0), _visible_pass(n), -n["order"]))["id"]


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "codetree"):
    """Compile CodeTree; ``model`` overrides the context's model (library use, tests)."""

    def think(state: CodeTreeState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        fixed = None if context.codetree_critic else context.codetree_width
        ideas = thinker.strategies(resolve_model(context, model), prompt_for(context, "thinker"), state["problem"],
                                   width=context.codetree_width, fixed=fixed)
        strategies = ideas.items or [""]  # nothing readable: one node solved without a hint
        nodes = {}
        for i, strategy in enumerate(strategies):
            node = _new_node(i, parent=None, text=strategy, strategy=strategy)
            nodes[node["id"]] = node
            emit("node_created", node=node["id"], parent=None, depth=1, text=strategy)
        frontier = list(nodes)
        if context.codetree_order == "dfs":
            frontier.reverse()  # a stack: the first strategy is tried first
        return {"nodes": nodes, "frontier": frontier, "cost": ideas.cost, "current": None}

    def pick(state: CodeTreeState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        nodes = state["nodes"]
        frontier = list(state.get("frontier", []))
        if _spent(state, context):
            return {"current": None, "stop": "budget_exhausted"}
        if context.codetree_order == "bfs":  # level by level, children of better parents first
            frontier.sort(key=lambda i: (nodes[i]["depth"], -nodes.get(nodes[i]["parent"] or "", {}).get("value", 0),
                                         nodes[i]["order"]))
        skipped = {}
        while frontier:
            node_id = frontier.pop() if context.codetree_order == "dfs" else frontier.pop(0)
            if nodes[node_id]["depth"] > context.codetree_max_depth:
                skipped[node_id] = {"status": "aborted"}
                continue
            return {"current": node_id, "frontier": frontier, "nodes": skipped}
        return {"current": None, "frontier": [], "nodes": skipped, "stop": "tree_exhausted"}

    def generate(state: CodeTreeState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        node = state["nodes"][state["current"]]
        parent = state["nodes"].get(node["parent"] or "")
        llm = resolve_model(context, model)
        if parent is None:
            reply = solver.write_code(llm, prompt_for(context, "solver"), state["problem"], hint=node["text"] or None)
        else:
            reply = debugger.repair(llm, prompt_for(context, "debugger"), state["problem"], code=parent["code"],
                                    feedback=parent.get("feedback", ""), reflection=node["text"])
        emit("generated", node=node["id"], depth=node["depth"])
        return {"nodes": {node["id"]: {"code": reply.code}}, "cost": {**reply.cost, "programs": 1}}

    def execute(state: CodeTreeState, runtime: Runtime[Context]) -> dict:
        return execute_node(state, context_of(runtime), state["current"])

    def critique(state: CodeTreeState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        nodes = state["nodes"]
        node = nodes[state["current"]]
        parent = nodes.get(node["parent"] or "")
        ratio = node["execution"]["pass_rate"] if node["execution"]["total"] else 1.0  # no visible tests: passing
        value, feedback, cost = ratio, node["feedback"], {}
        update: dict = {}
        accepted = False
        if not context.codetree_critic:
            if ratio > PASS_THRESHOLD:
                return _decide(node, "accept", "passes the visible tests", value, feedback, {}, {})
            if node["depth"] < context.codetree_max_depth:
                return _decide(node, "refine", "fails visible tests", value, feedback, {}, {})
            return _decide(node, "abort", "depth limit", value, feedback, {}, {})
        llm = resolve_model(context, model)
        critic_prompt = prompt_for(context, "critic")
        if ratio > PASS_THRESHOLD:
            verdict = critic.verify(llm, critic_prompt, state["problem"], code=node["code"], feedback=feedback,
                                    structured=context.structured_output)
            cost = verdict.cost
            emit("verdict", node=node["id"], accepted=bool(verdict.value), analysis=verdict.analysis[:300])
            update["critic_verdict"] = bool(verdict.value)
            if verdict.value:
                accepted = True
            else:
                feedback = f"{feedback}\n\n{REVIEW_MARK}\n\n{verdict.analysis}"
            value += PASS_BONUS
            if not accepted and parent is not None and _visible_pass(parent) \
                    and node["depth"] == context.codetree_max_depth:
                accepted = True  # the released code's forced accept at max depth
        if accepted:
            return _decide(node, "accept", "Critic accepted" if update.get("critic_verdict") else
                           "forced accept at max depth", value, feedback, cost, update)
        if ratio > PASS_THRESHOLD:  # visible pass rejected by the Critic
            if node["depth"] >= context.codetree_max_depth:
                return _decide(node, "abort", "depth limit", value, feedback, cost, update)
            return _decide(node, "refine", "Critic rejected a visible pass", value, feedback, cost, update)
        update["last_failing"] = node["id"]
        if node["depth"] >= context.codetree_max_depth:
            return _decide(node, "abort", "depth limit", value, feedback, cost, update)
        score = critic.score_tests(llm, critic_prompt, state["problem"], code=node["code"], feedback=feedback,
                                   structured=context.structured_output)
        emit("verdict", node=node["id"], score=score.value, analysis=score.analysis[:300])
        update["critic_score"] = int(score.value)
        value += int(score.value) / 15
        parent_value = parent.get("value", 0.0) if parent else 0.0
        if value < parent_value or (value == parent_value and node["depth"] > int(score.value)):
            return _decide(node, "abort", "value below its parent's", value, feedback, score.cost, update)
        return _decide(node, "refine", "refine", value, feedback, score.cost, update)

    def reflect(state: CodeTreeState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        nodes = state["nodes"]
        node = nodes[state["current"]]
        fixed = None if context.codetree_critic else context.codetree_width
        ideas = thinker.reflections(resolve_model(context, model), prompt_for(context, "thinker"), state["problem"],
                                    strategy=node["strategy"], code=node["code"], feedback=node["feedback"],
                                    width=context.codetree_width, fixed=fixed)
        children = {}
        for i, reflection in enumerate(ideas.items):
            child = _new_node(len(nodes) + i, parent=node, text=reflection, strategy=node["strategy"])
            children[child["id"]] = child
            emit("node_created", node=child["id"], parent=node["id"], depth=child["depth"], text=reflection)
        ids = list(children)
        frontier = list(state.get("frontier", []))
        frontier += list(reversed(ids)) if context.codetree_order == "dfs" else ids
        return {"nodes": children, "frontier": frontier, "cost": ideas.cost}

    def finalize(state: CodeTreeState, runtime: Runtime[Context]) -> dict:
        context = context_of(runtime)
        nodes = state.get("nodes", {})
        if state.get("accepted"):
            chosen, reason = state["accepted"], "accepted"
        else:
            chosen = choose_final(nodes, context.codetree_final, state.get("last_failing"))
            reason = "budget_exhausted" if _spent(state, context) else state.get("stop") or "tree_exhausted"
        emit("finished", node=chosen, stop_reason=reason)
        return finish(nodes, chosen, reason)

    builder = StateGraph(CodeTreeState, context_schema=Context, input_schema=SearchInput, output_schema=SearchOutput)
    for name_, fn in (("think", think), ("pick", pick), ("generate", generate), ("execute", execute),
                      ("critique", critique), ("reflect", reflect), ("finalize", finalize)):
        builder.add_node(name_, fn)
    builder.add_edge(START, "think")
    builder.add_edge("think", "pick")
    builder.add_conditional_edges("pick", lambda s: "generate" if s.get("current") else "finalize",
                                  ["generate", "finalize"])
    builder.add_edge("generate", "execute")
    builder.add_edge("execute", "critique")
    def after_critique(state: CodeTreeState, runtime: Runtime[Context]) -> str:
        if state["decision"] == "accept" or _spent(state, context_of(runtime)):
            return "finalize"  # no reflection once no program can be written from it
        return {"refine": "reflect", "abort": "pick"}[state["decision"]]

    builder.add_conditional_edges("critique", after_critique, ["finalize", "reflect", "pick"])
    builder.add_edge("reflect", "pick")
    builder.add_edge("finalize", END)
    return builder.compile(checkpointer=checkpointer, name=name).with_config(recursion_limit=10_000)


def _spent(state: CodeTreeState, context: Context) -> bool:
    return state.get("cost", {}).get("programs", 0) >= context.codetree_max_programs


def _decide(node: NodeRecord, decision: str, reason: str, value: float, feedback: str, cost: dict,
            extra: dict) -> dict:
    status = {"accept": "accepted", "refine": "refined", "abort": "aborted"}[decision]
    emit("decision", node=node["id"], decision=decision, reason=reason, value=round(value, 4))
    record = {"value": value, "feedback": feedback, "status": status, "decision_reason": reason}
    record.update({k: v for k, v in extra.items() if k in ("critic_score", "critic_verdict")})
    update = {"nodes": {node["id"]: record}, "decision": decision, "cost": cost}
    if decision == "accept":
        update["accepted"] = node["id"]
    if "last_failing" in extra:
        update["last_failing"] = extra["last_failing"]
    return update


graph = build_graph()
