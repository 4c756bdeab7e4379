"""CodeTree (Li et al., 2024): Thinker strategies -> Solver -> run -> Critic -> refine | abort | accept.

    START -> start -> think -> pick --(a node to try)--> generate -> execute -> critique --accept--> finalize
                                ^  \\--(budget spent / tree exhausted)--> finalize     |--refine--> reflect -> pick
                                \\-------------------------------------------------- abort

Every tree node is a program with its strategy (depth 1) or reflection (deeper). The search follows
the released ``agent_guide`` (SPEC §1.4): depth-first over strategies and reflections, at most
``codetree_max_programs`` Solver/Debugger programs, depth ``codetree_max_depth``. Node value =
visible pass fraction + 5/15 when all pass + Critic score/15 (failing nodes only). A problem without
visible tests counts as passing them, as in the released code, so the Critic's verdict (and its forced
accept at max depth) decides.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from pydantic import Field

from codeforest.agents import critic, debugger, solver, thinker
from codeforest.agents.base import Reply
from codeforest.agents.debugger import REVIEW_MARK
from codeforest.agents.verifier import verify
from codeforest.context import VerifierContext
from codeforest.cost import total_cost
from codeforest.graphs import codeprm, kit, search, selection
from codeforest.graphs.state import Execution, NodeRecord, SearchState
from codeforest.problems import Problem
from codeforest.suites import ExecutionResult
from codeforest.tools.released_exec import codetree_function_failures, codetree_stdin_failures
from codeforest.tools.testing import (
    PRM_PASSED,
    codetree_feedback,
    codetree_seconds,
    feedback_text,
    prm_feedback,
)

BUDGET_UNIT = "programs"
PASS_BONUS = 5 / 15
PASS_THRESHOLD = 0.99  # the released code's "r > 0.99"
STEPS_PER_PROGRAM = 5  # pick, generate, execute, critique, reflect
STRATEGY_LIST = 20  # the released strategy.py asks for 20 strategies
THINK_AGAIN = "\nThink Carefully."  # ... and again, with this after the problem, for the ones missing


class CodeTreeContext(VerifierContext):
    """CodeTree's settings (SPEC-codetree-bester-codeprm.md §1): the paper's and released code's defaults."""

    codetree_max_programs: int = Field(default=20, ge=1, description=(
        "CodeTree budget: Solver + Debugger programs per problem (paper: 20)."))
    codetree_max_depth: int = Field(default=3, ge=1, description="CodeTree maximum tree depth (3).")
    codetree_width: int = Field(default=0, ge=0, description=(
        "Strategies / reflections per node: a cap of 10 with the Critic; exactly 3 in the BFS/DFS variants "
        "(codetree_critic=false, Table 3). 0: that default."))
    codetree_order: Literal["dfs", "bfs", "list"] = Field(default="dfs", description=(
        "'dfs': last-in first-out, as the released agent_guide; 'bfs': level by level, children of "
        "higher-valued nodes first (Table 3's CodeTree-BFS); 'list': Table 2's Strategy List, no Critic and no "
        "debugging: 20 strategies (asked again with 'Think Carefully.' for any missing), each implemented once "
        "until one passes the visible tests."))
    codetree_critic: bool = Field(default=True, description=(
        "False: Table 3's CodeTree-BFS/DFS as released: no Critic; every program of an expansion is written "
        "and run at once, the children pushed in value order, the first visible pass wins, and when none "
        "passes there is no program (the problem counts as failed)."))
    codetree_verification: bool = Field(default=True, description=(
        "Table 4 ablation: false = w/o verification (a visible pass is accepted without the Critic)."))
    codetree_abort: bool = Field(default=True, description=(
        "Table 4 ablation: false = w/o node abort (a failing node is refined until the depth limit)."))
    codetree_scoring: bool = Field(default=True, description=(
        "Table 4 ablation: false = w/o scoring (no Critic score of failing nodes: execution feedback only)."))
    codetree_final: Literal["best", "last_failing"] = Field(default="best", description=(
        "Program returned when nothing is accepted: 'best' (highest value, as the paper says) or "
        "'last_failing' (what the released code returns)."))
    codetree_debugger_review: bool = Field(default=False, description=(
        "True: the Debugger also sees the Critic's review of the program it repairs (the paper's App. A.1, the "
        "Critic's judgement as extra environmental feedback); false: the review is stripped, as the released "
        "code does, and reaches the Debugger only through the Thinker's reflection."))
    codetree_feedback: Literal["codeforest", "released"] = Field(default="codeforest", description=(
        "The test feedback the Critic, Thinker and Debugger read: codeforest's (passing and failing tests, each "
        "failure with the value returned or the error), or the released executors' text (Tested passed / Tests "
        "failed, each failing assert with the value it printed; a syntax error reads 'True'), which a "
        "replay of the released code needs."))
    codetree_released_file: str = Field(default="", description=(
        "Under codetree_feedback='released', the released executor's program file (its folder's "
        "temp_files/temp_test<pid>.py): each test is run again in the sandbox as that file and judged as the "
        "released executor judges it (a standard-input program's output compared stripped, where codeforest "
        "reads numbers by value and white space loosely; a function's assert passed when the file exits cleanly), "
        "an error shown as Python's own traceback naming the file (a function's failing call printed from "
        "temp_test_output<pid>.py beside it, which needs codeforest[released]), a time-out as the released text. "
        "Empty: codeforest's verdicts and traceback excerpt. The sandbox must be able to write there (under /tmp)."))
    codetree_code_shown: Literal["program", "written"] = Field(default="program", description=(
        "The code of a node the Critic, Thinker and Debugger read (and, under codetree_feedback='released', the "
        "released executor runs): the program codeforest runs (a function's program with the prompt's import lines "
        "it lacks put first), or the program as the model wrote it, as the released code shows and runs it (its "
        "executor puts its own import lines first)."))
    codetree_parse: Literal["lines", "released"] = Field(default="lines", description=(
        "How the Thinker's numbered strategies and reflections and the Critic's 0-5 score are read: 'lines', each "
        "line starting with its number, stripped, and the score the last line ends with; 'released', the text after "
        "the first 'N.' anywhere on a line, as written (it also takes '-1. The given...' inside a sentence for an "
        "item, as the released code does), and the largest digit 0-5 anywhere in the reply's last line ('... is "
        "125, not 1. The final score is 0.' scores 5)."))
    codetree_partial_credit: bool = Field(default=True, description=(
        "True: a failing node's value starts from the fraction of visible tests it passes (the paper's execution "
        "score); false: a standard-input problem's failing node starts from 0 whatever it passes, as in the released "
        "code, whose stdin/stdout executor never counts a passed test (function problems keep the fraction)."))
    codetree_evaluator: Literal["critic", "verifier"] = Field(default="critic", description=(
        "Who judges a node: the Critic (the paper), or the Verifier (CodePRM) scoring the node's strategy and "
        "reflections: a visible pass is accepted when no step is flagged (at or below θ under "
        "verifier_threshold_rule=le, below it under lt) or the reply cannot be read; a failure scores "
        "round(5 · mean step score)."))


CONTEXT = CodeTreeContext


class CodeTreeState(SearchState, total=False):
    """The common state plus the search frontier and the current node."""

    frontier: list[str]
    current: str | None
    pending: list[str]  # BFS/DFS variants: the expansion's children still to write and run, in order
    batch: list[str]  # BFS/DFS variants: that expansion's children, pushed in value order once all have run
    expanding: str | None  # BFS/DFS variants: the node whose reflections come next
    # next: a variant's failing program; keep: an accepted program while min_candidates asks for more
    decision: Literal["accept", "refine", "abort", "next", "keep"] | None
    accepted: str | None  # the first accepted program
    last_failing: str | None
    stop: str | None


STATE = CodeTreeState
FRESH = {"frontier": [], "current": None, "decision": None, "accepted": None, "last_failing": None, "stop": None,
         "pending": [], "batch": [], "expanding": None}


def roles(context: CodeTreeContext) -> set[str]:
    """The roles this graph calls under these settings: the Debugger where a program can be repaired, the Critic
    (or the verifier, ``codetree_evaluator``) where it verifies or scores, and the selector's."""
    called = {"thinker", "solver"}
    tree = context.codetree_max_programs >= 2 and context.codetree_order != "list"
    if tree and (not context.codetree_critic or context.codetree_max_depth >= 2):
        called.add("debugger")
    judged = context.codetree_verification or (context.codetree_scoring and context.codetree_max_depth >= 2)
    if context.codetree_critic and context.codetree_order != "list" and judged:
        if context.codetree_evaluator == "critic":
            called.add("critic")
        elif context.verifier == "llm":
            called.add("verifier")
    return kit.roles_called(context, called, choices=context.codetree_max_programs >= 2)


def budget(context: CodeTreeContext) -> int:
    """CodeTree's budget in its unit: generated programs."""
    return context.codetree_max_programs


def recursion_limit(context: CodeTreeContext) -> int:
    """Steps of the longest run: start, think, five per program (the last one without reflect), finalize."""
    return kit.recursion_limit(2 + STEPS_PER_PROGRAM * context.codetree_max_programs)


# --- decision rules (pure) --------------------------------------------------------------------------

def visible_ratio(execution: Execution) -> float:
    """The visible pass fraction; 1.0 without visible tests (the released code's ``execute``)."""
    return execution["pass_rate"] if execution.get("total") else 1.0


def passes_visible(node: NodeRecord) -> bool:
    """The released code's visible pass: ``r > 0.99``."""
    return "execution" in node and visible_ratio(node["execution"]) > PASS_THRESHOLD


def partial_credit(problem: dict, context: CodeTreeContext) -> bool:
    """Whether a failing node is credited with the visible tests it passes (``codetree_partial_credit``, which the
    released code lacks for standard-input problems only)."""
    return context.codetree_partial_credit or problem["kind"] != "stdio"


def judge_visible_pass(verdict: bool, depth: int, max_depth: int, parent_passes: bool) -> tuple[str, str]:
    """A visible pass: the Critic's verdict, the released code's forced accept at max depth, else refine."""
    if verdict:
        return "accept", "Critic accepted"
    if parent_passes and depth == max_depth:
        return "accept", "forced accept at max depth"
    return ("abort", "depth limit") if depth >= max_depth else ("refine", "Critic rejected a visible pass")


def judge_failure(value: float, parent_value: float, depth: int, score: int) -> tuple[str, str]:
    """A scored failing node: abort below its parent's value (ties abort when deeper than the score)."""
    if value < parent_value or (value == parent_value and depth > score):
        return "abort", "value below its parent's"
    return "refine", "refine"


def choose_final(nodes: dict[str, NodeRecord], rule: str, last_failing: str | None) -> str | None:
    """The node whose program is returned when nothing was accepted."""
    tried = sorted((n for n in nodes.values() if n.get("code")), key=lambda n: n["order"])
    if not tried:
        return None
    if rule == "last_failing":
        return last_failing or tried[0]["id"]
    # a visible pass first: one the token budget stopped before the Critic lacks its bonus (value 1.0), below a
    # scored failure's (e.g. 3/4 + 4/15); a scored pass (at least 1 + 5/15) is above every failure anyway
    return kit.best(tried, key=lambda n: (passes_visible(n), n.get("value", 0.0)))["id"]


def next_in_frontier(frontier: list[str], nodes: dict[str, NodeRecord], order: str) -> list[str]:
    """The frontier in the order it is taken from: a stack (dfs) or level by level, better parents first."""
    if order == "dfs":
        return list(reversed(frontier))
    return sorted(frontier, key=lambda i: (nodes[i]["depth"], -nodes.get(nodes[i]["parent"] or "", {}).get("value", 0),
                                           nodes[i]["order"]))


def width(context: CodeTreeContext) -> int:
    """Strategies / reflections per node: the setting, else 10 (a cap) with the Critic and 3 without."""
    if context.codetree_order == "list":
        return context.codetree_width or STRATEGY_LIST
    return context.codetree_width or (10 if context.codetree_critic else 3)


def variant(context: CodeTreeContext) -> bool:
    """True for the searches without the Critic: Table 3's BFS/DFS and Strategy List."""
    return not context.codetree_critic or context.codetree_order == "list"


def push_batch(frontier: list[str], batch: list[str], nodes: dict[str, NodeRecord], order: str) -> list[str]:
    """The released BFS/DFS variants' frontier once an expansion's programs have all run.

    BFS keeps a queue sorted by value, highest first (taken from the front); DFS a stack whose children are
    pushed lowest value first, so the best is taken next (every expansion reversed before its stable sort, as
    dfs_real.py does, so equal values go to the earliest child).
    """
    value = {i: nodes[i].get("value", 0.0) for i in batch}
    if order == "bfs":
        return frontier + sorted(batch, key=lambda i: -value[i])
    return frontier + sorted(reversed(batch), key=lambda i: value[i])


def spent(state: CodeTreeState, context: CodeTreeContext) -> bool:
    """True once the program budget is used up."""
    return state.get("cost", {}).get("programs", 0) >= context.codetree_max_programs


# --- nodes ----------------------------------------------------------------------------------------------

def think(state: CodeTreeState, runtime: Runtime[CodeTreeContext], model: BaseChatModel | None = None) -> dict:
    """The Thinker's strategies become the depth-1 nodes."""
    context = kit.settings(runtime, CONTEXT)
    fixed = width(context) if variant(context) else None
    llm, prompt = kit.chat_model(context, model), kit.prompt(context, "thinker")
    released = context.codetree_parse == "released"
    ideas = thinker.strategies(llm, prompt, state["problem"], width=width(context), fixed=fixed, released=released)
    if context.codetree_order == "list" and len(ideas.value) < width(context):
        missing = width(context) - len(ideas.value)
        careful = {**state["problem"], "prompt": state["problem"]["prompt"] + THINK_AGAIN}
        again = thinker.strategies(llm, prompt, careful, width=missing, fixed=missing, released=released)
        ideas.value, ideas.cost = ideas.value + again.value, total_cost([ideas.cost, again.cost])
    nodes: dict[str, NodeRecord] = {}
    for i, strategy in enumerate(ideas.value or [""]):  # nothing readable: one node solved without a hint
        node = kit.new_node(i + 1, parent=None, kind="code", text=strategy, strategy=strategy, value=0.0)
        nodes[node["id"]] = node
    if variant(context):  # the variants write and run every strategy's program first
        return {"nodes": nodes, "pending": list(nodes), "batch": list(nodes), "cost": ideas.cost}
    return {"nodes": nodes, "frontier": _pushed([], list(nodes), context), "cost": ideas.cost}


def pick(state: CodeTreeState, runtime: Runtime[CodeTreeContext]) -> dict:
    """Take the next node within the depth limit, or stop (budget spent, tree exhausted, no steps left)."""
    context = kit.settings(runtime, CONTEXT)
    if spent(state, context):
        return {"current": None, "stop": "budget_exhausted"}
    if kit.steps_left(state) < 4:  # generate, execute, critique, finalize
        return {"current": None, "stop": kit.STEP_LIMIT}
    if variant(context):
        return pick_variant(state, context)
    nodes = state["nodes"]
    queue = next_in_frontier(state["frontier"], nodes, context.codetree_order)
    skipped = {}
    while queue:
        node_id = queue.pop(0)
        if nodes[node_id]["depth"] <= context.codetree_max_depth:
            return {"current": node_id, "frontier": next_in_frontier(queue, nodes, context.codetree_order),
                    "nodes": skipped}
        skipped[node_id] = {"status": "aborted"}
    return {"current": None, "frontier": [], "nodes": skipped, "stop": "tree_exhausted"}


def pick_variant(state: CodeTreeState, context: CodeTreeContext) -> dict:
    """BFS/DFS variants: the next program of the expansion, else the next node to expand (BFS: the front of
    the queue; DFS: the top of the stack) within the depth limit."""
    if state["pending"]:
        return {"current": state["pending"][0], "pending": state["pending"][1:], "expanding": None}
    frontier, skipped = list(state["frontier"]), {}
    while frontier:
        node_id = frontier.pop(0 if context.codetree_order == "bfs" else -1)
        if state["nodes"][node_id]["depth"] <= context.codetree_max_depth:  # the released depth 0 is our 1
            return {"current": None, "expanding": node_id, "frontier": frontier, "nodes": skipped}
        skipped[node_id] = {"status": "aborted"}
    return {"current": None, "expanding": None, "frontier": [], "nodes": skipped, "stop": "tree_exhausted"}


def generate(state: CodeTreeState, runtime: Runtime[CodeTreeContext], model: BaseChatModel | None = None) -> dict:
    """The Solver writes a strategy's program; the Debugger repairs the parent's from a reflection."""
    context = kit.settings(runtime, CONTEXT)
    node = state["nodes"][state["current"]]
    parent = state["nodes"].get(node["parent"] or "")
    llm = kit.chat_model(context, model)
    if parent is None:
        reply = solver.write_code(llm, kit.prompt(context, "solver"), state["problem"], hint=node["text"] or None)
    else:
        reply = debugger.repair(llm, kit.prompt(context, "debugger"), state["problem"], code=shown_code(parent),
                                feedback=parent.get("feedback", ""), reflection=node["text"],
                                review=context.codetree_debugger_review)
    kit.emit("generated", node=node["id"], depth=node["depth"])
    written = {"written": solver.own_program(state["problem"], reply.raw)} \
        if context.codetree_code_shown == "written" else {}
    return {"nodes": {node["id"]: {"code": reply.value, **written}}, "cost": {**reply.cost, "programs": 1}}


def shown_code(node: NodeRecord) -> str:
    """A node's program as the Critic, Thinker and Debugger read it (``codetree_code_shown``)."""
    return node.get("written", node["code"])


def execute(state: CodeTreeState, runtime: Runtime[CodeTreeContext]) -> dict:
    """Run the current node's program on the visible tests."""
    context = kit.settings(runtime, CONTEXT)
    node, problem = state["nodes"][state["current"]], state["problem"]
    shown = feedback_text
    if context.codetree_feedback == "released":
        shown = lambda r: codetree_feedback(r, context.test_timeout)  # noqa: E731
    result, tested = kit.run_program(problem, node["code"], context, node["id"], shown)
    if context.codetree_feedback == "released" and context.codetree_released_file:
        result, texts = released_verdicts(problem, shown_code(node), result, context)
        tested.update(execution=result.summary(), status=kit.program_status(result),
                      feedback=codetree_feedback(result, context.test_timeout, [t for t in texts if t is not None]))
    if context.codetree_evaluator == "verifier":  # the Verifier reads test results in CodePRM's format
        tested["prm_feedback"] = prm_feedback(result)
    return {"nodes": {node["id"]: {**tested, "value": result.pass_rate}}, "cost": {"sandbox_runs": 1}}


def released_verdicts(problem: Problem, code: str, result: ExecutionResult,
                      context: CodeTreeContext) -> tuple[ExecutionResult, list[str | None]]:
    """The tests judged and shown as the released executors do, the program run as ``codetree_released_file``: a
    stdin program's output compared stripped (codeforest's own comparison is more lenient), a function's assert
    passed when its file exits cleanly. The result with those verdicts, and each test's failure text (None:
    passed)."""
    seconds = codetree_seconds(context.test_timeout)
    if problem["kind"] == "stdio":
        texts = codetree_stdin_failures(code, [(o.test, o.expected or "") for o in result.outcomes],
                                        context.codetree_released_file, seconds, backend=context.sandbox)
    else:
        texts = codetree_function_failures(code, [o.test.strip() for o in result.outcomes],
                                           context.codetree_released_file, seconds, backend=context.sandbox)
    outcomes = [o if o.passed == (text is None) else
                replace(o, passed=text is None, reason=None if text is None else o.reason or "wrong answer")
                for o, text in zip(result.outcomes, texts, strict=True)]
    return replace(result, passed=sum(text is None for text in texts), outcomes=outcomes), texts


def critique(state: CodeTreeState, runtime: Runtime[CodeTreeContext], model: BaseChatModel | None = None) -> dict:
    """The Critic's verdict on a visible pass or score of a failure; then accept, refine or abort."""
    context = kit.settings(runtime, CONTEXT)
    node = state["nodes"][state["current"]]
    parent = state["nodes"].get(node["parent"] or "")
    ratio, depth, max_depth = visible_ratio(node["execution"]), node["depth"], context.codetree_max_depth
    value, feedback, cost, record = ratio, node["feedback"], {}, {}
    if not partial_credit(state["problem"], context) and ratio <= PASS_THRESHOLD:
        value = 0.0  # the released stdin/stdout executor: no pass fraction short of passing them all
    last_failing = state.get("last_failing")
    if variant(context):
        decision, reason = ("accept", "passes the visible tests") if ratio > PASS_THRESHOLD else ("next", "fails")
    elif ratio > PASS_THRESHOLD and not context.codetree_verification:
        decision, reason, value = "accept", "passes the visible tests (w/o verification)", value + PASS_BONUS
    elif ratio > PASS_THRESHOLD:
        verdict = judge_pass(state, context, kit.chat_model(context, model), node)
        cost, record["critic_verdict"], value = verdict.cost, bool(verdict.value), value + PASS_BONUS
        kit.emit("verdict", node=node["id"], accepted=bool(verdict.value), analysis=verdict.analysis[:300])
        if not verdict.value:
            feedback = f"{feedback}\n\n{REVIEW_MARK}\n\n{verdict.analysis}"
        decision, reason = judge_visible_pass(bool(verdict.value), depth, max_depth,
                                              parent is not None and passes_visible(parent))
    else:
        last_failing = node["id"]
        if depth >= max_depth:
            decision, reason = "abort", "depth limit"
        elif not context.codetree_scoring:  # execution feedback only: abort below the parent's value
            below = value < (parent.get("value", 0.0) if parent else 0.0)
            decision, reason = ("abort", "value below its parent's") if below else ("refine", "refine")
        else:
            score = judge_failure_score(state, context, kit.chat_model(context, model), node)
            kit.emit("verdict", node=node["id"], score=score.value, analysis=score.analysis[:300])
            cost, record["critic_score"], value = score.cost, int(score.value), value + int(score.value) / 15
            decision, reason = judge_failure(value, parent.get("value", 0.0) if parent else 0.0, depth,
                                             int(score.value))
    if decision == "abort" and reason != "depth limit" and not context.codetree_abort:
        decision, reason = "refine", "refine (w/o node abort)"
    if decision == "accept" and kit.wants_more(state["nodes"], context):  # this node's execution is there already
        decision, reason = "keep", f"{reason}; searching on for {context.min_candidates} passing programs"
    status = {"accept": "accepted", "keep": "accepted", "refine": "refined", "abort": "aborted",
              "next": "failed"}[decision]
    kit.emit("decision", node=node["id"], decision=decision, reason=reason, value=round(value, 4))
    update = {"nodes": {node["id"]: {**record, "value": value, "feedback": feedback, "status": status,
                                     "decision_reason": reason}},
              "decision": decision, "cost": cost, "last_failing": last_failing}
    if decision in ("accept", "keep"):
        update["accepted"] = state.get("accepted") or node["id"]
    if decision in ("next", "keep"):
        # a variant's expansion has run its last program: its children join the frontier by value (Strategy
        # List never debugs)
        if variant(context) and not state["pending"] and context.codetree_order != "list":
            nodes = {**state["nodes"], node["id"]: {**node, "value": value}}
            update["frontier"] = push_batch(state["frontier"], state["batch"], nodes, context.codetree_order)
        if kit.steps_left(state) < 5:  # pick, (reflect, pick,) generate, execute, critique, finalize
            update["stop"] = kit.STEP_LIMIT
    elif decision != "accept" and \
            kit.steps_left(state) < (STEPS_PER_PROGRAM if decision == "refine" else STEPS_PER_PROGRAM - 1) + 1:
        update["stop"] = kit.STEP_LIMIT  # no room for (a reflection and) another program, then finalize
    return update


def chain(nodes: dict[str, NodeRecord], node: NodeRecord) -> list[str]:
    """A node's strategy and the reflections below it, from the top: the thoughts the Verifier scores."""
    return search.thoughts_on(nodes, search.path_to(nodes, node["id"]))


def judge_pass(state: CodeTreeState, context: CodeTreeContext, llm: BaseChatModel, node: NodeRecord) -> Reply:
    """The verdict on a visible pass: the Critic's, or the Verifier's (accepted when no step is flagged)."""
    if context.codetree_evaluator == "critic":
        return critic.verify(llm, kit.prompt(context, "critic"), state["problem"], code=shown_code(node),
                             feedback=node["feedback"], structured=context.structured_output)
    scored = verify(codeprm.verifier(context, llm), state["problem"]["prompt"], chain(state["nodes"], node),
                    node["code"], PRM_PASSED)
    # an unreadable reply (0.5 a thought) flags nothing: accepted, as the Critic's unreadable verdict is
    flagged = codeprm.below(scored.value, context.verifier_threshold, context.verifier_threshold_rule) \
        if scored.parsed else []
    return Reply(not flagged, scored.raw, scored.cost, scored.parsed, _shown(scored.value))


def judge_failure_score(state: CodeTreeState, context: CodeTreeContext, llm: BaseChatModel,
                        node: NodeRecord) -> Reply:
    """The 0-5 score of a failing node: the Critic's, or round(5 · the Verifier's mean step score)."""
    if context.codetree_evaluator == "critic":
        return critic.score_tests(llm, kit.prompt(context, "critic"), state["problem"], code=shown_code(node),
                                  feedback=node["feedback"], structured=context.structured_output,
                                  released=context.codetree_parse == "released")
    scored = verify(codeprm.verifier(context, llm), state["problem"]["prompt"], chain(state["nodes"], node),
                    node["code"], node.get("prm_feedback", node["feedback"]))
    mean = codeprm.aggregate(scored.value, "mean")
    return Reply(round(5 * mean), scored.raw, scored.cost, scored.parsed, _shown(scored.value))


def _shown(scores: list[float]) -> str:
    return "Verifier step scores: " + ", ".join(f"{i}-Thought {s:.2f}" for i, s in enumerate(scores, 1))


def reflect(state: CodeTreeState, runtime: Runtime[CodeTreeContext], model: BaseChatModel | None = None) -> dict:
    """The Thinker's reflections on the current node become its children."""
    context = kit.settings(runtime, CONTEXT)
    node = state["nodes"][state["expanding"] or state["current"]]
    fixed = width(context) if variant(context) else None
    ideas = thinker.reflections(kit.chat_model(context, model), kit.prompt(context, "thinker"), state["problem"],
                                strategy=node["strategy"], code=shown_code(node), feedback=node["feedback"],
                                width=width(context), fixed=fixed, released=context.codetree_parse == "released")
    base = kit.next_order(state["nodes"])
    children: dict[str, NodeRecord] = {}
    for i, reflection in enumerate(ideas.value):
        child = kit.new_node(base + i, parent=node, kind="code", text=reflection, strategy=node["strategy"],
                             value=0.0)
        children[child["id"]] = child
    if variant(context):
        return {"nodes": children, "pending": list(children), "batch": list(children), "expanding": None,
                "cost": ideas.cost}
    return {"nodes": children, "frontier": _pushed(state["frontier"], list(children), context), "cost": ideas.cost}


def finalize(state: CodeTreeState, runtime: Runtime[CodeTreeContext]) -> dict:
    """Return the accepted program, else the final choice (``codetree_final``)."""
    context = kit.settings(runtime, CONTEXT)
    if state.get("accepted"):
        return kit.finish_node(state, state["accepted"], "accepted")
    reason = "budget_exhausted" if spent(state, context) else state.get("stop") or "tree_exhausted"
    if variant(context):  # the released variants count the problem as failed: no program
        return kit.finish(state, None, "", None, reason)
    chosen = choose_final(state["nodes"], context.codetree_final, state.get("last_failing"))
    return kit.finish_node(state, chosen, reason)


def _pushed(frontier: list[str], ids: list[str], context: CodeTreeContext) -> list[str]:
    """The frontier with new nodes added so that the first of them is taken first."""
    return frontier + (list(reversed(ids)) if context.codetree_order == "dfs" else ids)


# --- wiring ---------------------------------------------------------------------------------------------

def after_critique(state: CodeTreeState, runtime: Runtime[CodeTreeContext]) -> str:
    """Finalize on accept, a spent budget or no steps left (no reflection no program can use); else go on."""
    if state["decision"] == "accept" or spent(state, kit.settings(runtime, CONTEXT)) or state.get("stop"):
        return "finalize"
    return {"refine": "reflect", "abort": "pick", "next": "pick", "keep": "pick"}[state["decision"]]


def graph_builder(model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled CodeTree graph; ``model`` replaces the context's model."""
    builder = kit.builder(STATE, CONTEXT)
    kit.add_nodes(builder, {"start": kit.starter(FRESH, recursion_limit, CONTEXT, roles), "think": think, "pick": pick,
                            "generate": generate, "execute": execute, "critique": critique, "reflect": reflect,
                            "finalize": finalize}, model)
    builder.add_edge(START, "start")
    builder.add_edge("start", "think")
    builder.add_edge("think", "pick")
    builder.add_conditional_edges("pick", lambda s: "generate" if s["current"] else "reflect" if s.get("expanding")
                                  else "finalize", ["generate", "reflect", "finalize"])
    builder.add_edge("generate", "execute")
    builder.add_edge("execute", "critique")
    builder.add_conditional_edges("critique", after_critique, ["finalize", "reflect", "pick"])
    builder.add_edge("reflect", "pick")
    selection.add_selection(builder, model)
    return builder


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "codetree"):
    """Compile CodeTree; ``model`` overrides the context's model (library use, tests)."""
    return graph_builder(model).compile(checkpointer=checkpointer, name=name)


graph = build_graph()
