"""RPM-MCTS (2025): MCTS over algorithmic steps with a knowledge-base process reward.

    START -> start -> setup -> select -> expand -> simulate --(success)------------------> finalize -> END
                                 ^                      |--(failed)--> revise --(success)--/
                                 |                      \\--> backpropagate <--/
                                 \\--------(rollouts left)--------/

The root is the problem (with its public tests appended, as the released code shows it). Per rollout
(Alg. 1, SPEC Part 2): from the root, the child with the best selection score is followed while a node is
expanded; the leaf gets ``rpm_width`` next steps written one after another (each sees the earlier ones and
the reflection of earlier simulations); a step whose embedding is more than ``rpm_similarity`` cosine-similar
to a kept sibling is dropped; each kept step gets its knowledge-base reward K (the best cosine similarity of
problem + steps to a stored step prefix of the problem's topic) and the step critic's 0-10 score. The best
new step is rolled out to complete steps, implemented as code and run on the public tests; the LLM scores
the solution, Q = γ·10·pass rate + (1-γ)·LLM score. All public tests passing with an LLM score of at least
``rpm_success`` ends the search with that code. Otherwise the first wrong step is located (from a block-level
trace when ``rpm_ldb``), the rolled-out steps before it are grafted into the tree and the evaluator's analysis
(``rpm_reflection``) becomes the reflection for later expansions. The released code then revises a failed
roll-out: when the wrong step is the simulated one, the node editor may rewrite it, and one more roll-out from
the kept steps sees the wrong code and the reflection (``rpm_edit``, ``rpm_rerollout``; off: Alg. 1 as
printed); a re-roll-out that passes the public tests is grafted like a roll-out, and its program with the
evaluator's analysis becomes the path's reflection. The value is backed up along the path. At the end, without
a success, the best node's path is turned into code once more.

Values: ``rpm_selection="paper"`` is Eq. 2-3, Q + β·√(ln N(s) / (1 + N(s,a))) + α·10·K, with a node's initial Q
its critic score and Q the mean of the returns once it has any (a re-roll-out's value is a return of its own,
backed up from the node it started from), and the final pick the highest-valued leaf;
``"released"`` is the released code's, where K is folded into the initial value V0 = (1-α)·critic + α·10·K, a
child scores V + β·√(2 ln N(s) / N(s,a)), an unvisited one V + 8, a simulated node's V moves halfway to the return
(a re-roll-out's, when there was one) and an ancestor's is the visit-weighted mean of its children's, and the final
pick is the highest-valued node of any depth. Both pick a passing roll-out first. Ties go to a seeded random
choice. Everything is on the released code's 0-10 scale.
"""

from __future__ import annotations

import math
import random
import zlib
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from pydantic import Field

from codeforest.agents import critic, solver, thinker
from codeforest.context import Context
from codeforest.cost import total_cost
from codeforest.graphs import kit, search, selection
from codeforest.graphs.state import NodeRecord, SearchState, merge_nodes
from codeforest.problems import Problem
from codeforest.suites import ExecutionResult
from codeforest.tools.knowledge import (
    KnowledgeBase,
    KnowledgeError,
    cosine_matrix,
    embedder,
    open_knowledge,
)
from codeforest.tools.released_exec import (
    RPM_LABEL,
    judged_as_released,
    released_failures,
    results_text,
)
from codeforest.tools.testing import feedback_text

BUDGET_UNIT = "rollouts"
ROOT = kit.ROOT
UNVISITED_BONUS = 8.0  # the released code's INF for an unvisited child


class RpmContext(Context):
    """RPM-MCTS's settings (SPEC-rethinkmcts-rpm-mcts.md Part 2): the paper's values, the released code's where
    the paper gives none, the released variants as options."""

    rpm_rollouts: int = Field(default=5, ge=1, description="RPM-MCTS budget: rollouts (5).")
    rpm_width: int = Field(default=3, ge=1, description="Steps proposed per expansion, b (3).")
    rpm_beta: float = Field(default=0.5, ge=0, description="UCB exploration weight β (0.5).")
    rpm_alpha: float = Field(default=0.5, ge=0, le=1, description="Knowledge-base weight α (0.5).")
    rpm_similarity: float = Field(default=0.85, gt=0, le=1, description=(
        "Sibling filter: a step more cosine-similar than this to a kept sibling is dropped (0.85)."))
    rpm_gamma: float = Field(default=0.5, ge=0, le=1, description=(
        "Q = γ·10·pass rate + (1-γ)·LLM score (the paper gives none; released: 0.5)."))
    rpm_success: float = Field(default=9.0, ge=0, le=10, description=(
        "LLM score (0-10) that, with every public test passing, ends the search (released: 9)."))
    rpm_temperature: float = Field(default=0.7, ge=0, le=2, description=(
        "Sampling temperature of steps, roll-outs and evaluations (released: 0.7); each call has its own seed."))
    rpm_selection: Literal["paper", "released"] = Field(default="paper", description=(
        "'paper': Eq. 2-3, UCB + α·10·K at every selection, Q the mean of the returns, the best leaf's path "
        "implemented at the end; 'released': K folded into the initial value, V + β·√(2 ln N / n), an unvisited "
        "child V + 8, the released blend and weighted-mean backup, the best node's path at the end."))
    rpm_topic_temperature: float = Field(default=0.0, ge=0.0, le=2.0, description=(
        "Sampling temperature of the topic call, which only the released code has (the paper names no topic "
        "call): 0, greedy like every other call here; the released code samples it at 0.7 (seed 0 here, so a "
        "rerun asks the same)."))
    rpm_kb: bool = Field(default=True, description=(
        "False: the 'w/o KB' ablation (K = 0, no knowledge base needed)."))
    rpm_filter: bool = Field(default=True, description="False: the ablation without the sibling similarity filter.")
    rpm_results_text: Literal["codeforest", "released"] = Field(default="codeforest", description=(
        "What the solution evaluator reads about the public tests: codeforest's feedback text, or the released "
        "executor's results list as Python prints it ([True, ''] for a passing test, [False, {'error': ..., "
        "'output': ...}] for a failing one, an error with its harness's frames), run so in the sandbox (function "
        "problems); and the program is judged as that executor judges it, after its 16 import lines."))
    rpm_exec_reward: bool = Field(default=True, description=(
        "False: the ablation without the execution reward: Q is the LLM's score alone, the evaluator is not shown "
        "the test results, success needs only the LLM score, and a failed roll-out is neither located nor revised "
        "(the released code's policy; the program is still run, for the report)."))
    rpm_edit: bool = Field(default=True, description=(
        "After a failed roll-out whose first wrong step is the simulated one, ask whether to rewrite it (the "
        "released code's node editor; false: Alg. 1 as printed)."))
    rpm_rerollout: bool = Field(default=True, description=(
        "After a failed roll-out, roll out once more from the kept steps with the wrong code and the reflection, "
        "and graft a roll-out that passes the public tests with a low LLM score before rolling out again (the "
        "released code; false: Alg. 1 as printed, where only a failing roll-out is located, grafted and reflected "
        "on, and a passing one is valued and backed up)."))
    rpm_rerollout_return: Literal["auto", "own", "replace"] = Field(default="auto", description=(
        "How a re-roll-out's value is backed up: 'own', as a return of its own from the node it started from (one "
        "more visit); 'replace', in place of the roll-out's, from the simulated step (the released code); 'auto': "
        "own under rpm_selection=paper, replace under released."))
    rpm_layout: Literal["codeforest", "released"] = Field(default="codeforest", description=(
        "How the path is written into the prompts: one step per line, '(none)' for nothing (codeforest's), or as "
        "the released code's node text: a line break before every step and after a proposed one, 'None' for "
        "nothing, earlier proposals as 'History i:' lines after the prompt's 'history' sentence; the knowledge-base "
        "query and the critic then read that text too; and replies are read as the released code reads them: a "
        "proposal's step as written (an unreadable one kept as a blank step), the locator's <step_n> number alone, "
        "in range or not, the node editor's step as written; a re-roll-out's reflection is its program, a line "
        "break and the analysis, even an empty one, and an empty evaluator analysis reaches the locator as it is."))
    rpm_extract_steps: bool = Field(default=False, description=(
        "True: after every roll-out, one more call breaks its reply into tagged steps (the released step extractor, "
        "not in the paper); the code writer then implements that answer and the rolled steps are read from it."))
    rpm_ldb: bool = Field(default=True, description=(
        "True: locate the wrong step from a block-level trace of a failing test (the paper); False: from the "
        "evaluator's analysis (the released run config)."))
    rpm_reflection: Literal["evaluator", "locator"] = Field(default="evaluator", description=(
        "The reflection a failed roll-out leaves (the node editor, the re-roll-out and the next expansions see "
        "it): the LLM evaluator's analysis (Alg. 1 line 44, and the released code with LDB off, its run config; "
        "the locator's when the evaluator gave none) or the error-step locator's (SPEC §2.4's reading)."))


CONTEXT = RpmContext


class RpmState(SearchState, total=False):
    """The common state plus the topic, the current path, its new steps, the reflection and the rollouts."""

    topic: str | None
    path: list[str]
    new_steps: list[str]  # the steps the last expansion added
    simulated: str | None  # the step the last simulation rolled out
    q: float  # its solution value, to back up
    rerolled: dict | None  # the re-roll-out after a failure: the node it started from and its value
    reflection: str  # the reflection of the latest failed simulation (``rpm_reflection``)
    rollouts: int
    solved: str | None  # the node ending a roll-out that passed
    succeeded: str | None  # the first such node while min_candidates keeps the search going
    failure: dict | None  # the last failed roll-out: its code, the located step, the last kept node
    stop: str | None


STATE = RpmState
FRESH = {"topic": None, "path": [], "new_steps": [], "simulated": None, "q": 0.0, "rerolled": None, "reflection": "",
         "rollouts": 0, "solved": None, "succeeded": None, "failure": None, "stop": None}


def roles(context: RpmContext) -> set[str]:
    """The roles this graph calls under these settings: the topic call with the knowledge base, the locator with the
    execution reward, and the selector's."""
    called = {"thinker", "solver", "critic"}
    if context.rpm_kb:
        called.add("topic")
    if context.rpm_exec_reward:
        called.add("locator")
    return kit.roles_called(context, called)


def budget(context: RpmContext) -> int:
    """RPM-MCTS's budget in its unit: rollouts."""
    return context.rpm_rollouts


def recursion_limit(context: RpmContext) -> int:
    """Steps of the longest run: start, setup, five per rollout (select, expand, simulate, revise, backpropagate),
    finalize, and finalize again when the first one's model call fails (its fault handler finalizes)."""
    return kit.recursion_limit(4 + 5 * context.rpm_rollouts)  # and a finalize after a failed one


# --- decision rules (pure) --------------------------------------------------------------------------

def question(problem: Problem) -> str:
    """The problem as RPM-MCTS shows it: the prompt with the public tests appended."""
    tests = problem["public_tests"]
    shown = tests if problem["kind"] == "function" else [f"input: {t['input']!r} -> output: {t['output']!r}"
                                                         for t in tests]
    return problem["prompt"] + "\npublic tests: \n" + "\n".join(shown)  # as the released MCTS_Task builds it


def steps_on(nodes: dict[str, NodeRecord], path: list[str]) -> list[str]:
    """The steps along a path, numbered as the prompts show them."""
    return [f"Step {i}: {nodes[n]['text']}" for i, n in enumerate((n for n in path if n != ROOT), 1)]


def released_path(nodes: dict[str, NodeRecord], path: list[str]) -> str:
    """The path as the released code writes a node's text (``node.y``): a line break before every step and after a
    proposed one (a grafted step has none after it and is the extractor's tag as written, when there was one; an
    edited step is joined without any, as released)."""
    text = ""
    for i, node in enumerate((nodes[n] for n in path if n != ROOT), 1):
        if "replaced_thought" in node:  # the editor's reply as written (before it was kept so: numbered here)
            text += node.get("action", f"Step {i}: {node['text']}")
        elif node.get("grafted"):
            text += "\n" + node.get("action", f"Step {i}: {node['text']}")
        else:
            text += "\n" + released_action(node["text"], i)
    return text


def released_action(step: str, number: int) -> str:
    """A proposed step as the released code adds it to a node's text: nothing for a blank (unreadable) one."""
    return f"Step {number}: {step}\n" if step else ""


def released_history(prompt, proposals: list[str], number: int) -> str:
    """The earlier proposals of an expansion as the released prompt shows them (nothing before the first)."""
    if not proposals:
        return ""
    head = prompt.render("history") if prompt.has("history") else ""
    return head + "".join(f"History {j}: {released_action(p, number)}.\n" for j, p in enumerate(proposals))


def scored_before(nodes: dict[str, NodeRecord], text: str) -> NodeRecord | None:
    """The node whose step was valued with this released text earlier in the run (the released value cache)."""
    return next((n for n in nodes.values() if n.get("scored_text") == text), None)


def released_fallback(written: int, path: int) -> int:
    """The step the released locator falls back on: the 0-based index of the first rolled step (of ``written``
    steps past a path of ``path``), read as a step number; the last index when none was rolled."""
    return path if written > path else written - 1


def initial_value(step_score: float, kb_reward: float, context: RpmContext) -> float:
    """A new step's value: its critic score, with K folded in under the released selection (with a KB)."""
    if context.rpm_selection == "released" and context.rpm_kb:  # without a KB the released V0 is the critic's
        return (1 - context.rpm_alpha) * step_score + context.rpm_alpha * 10 * kb_reward
    return step_score


def selection_score(child: NodeRecord, parent_visits: int, context: RpmContext) -> float:
    """Eq. 2-3 (paper) or the released code's UCB over V."""
    value, visits = child.get("value", 0.0), child.get("visits", 0)
    if context.rpm_selection == "released":
        if visits == 0:
            return value + UNVISITED_BONUS
        return value + context.rpm_beta * math.sqrt(2 * math.log(max(parent_visits, 1)) / visits)
    explore = math.sqrt(math.log(parent_visits) / (1 + visits)) if parent_visits > 0 else 0.0
    return value + context.rpm_beta * explore + context.rpm_alpha * 10 * child.get("kb_reward", 0.0)


def best_child(nodes: dict[str, NodeRecord], parent: str, context: RpmContext, rng: random.Random,
               among: list[str] | None = None) -> str | None:
    """The child with the best selection score; ties resolved at random (seeded)."""
    kids = [c for c in search.children(nodes, parent) if among is None or c["id"] in among]
    if not kids:
        return None
    scores = [selection_score(c, nodes[parent].get("visits", 0), context) for c in kids]
    top = max(scores)
    return rng.choice([c["id"] for c, s in zip(kids, scores, strict=True) if s == top])


def kept_siblings(similarity, threshold: float) -> list[int]:
    """Greedy in proposal order: a step is kept unless it is more similar than ``threshold`` to a kept one. A
    similarity that is not a number (WordLlama embeds an empty step as NaN) is not above it, as released."""
    kept: list[int] = []
    for i in range(len(similarity)):
        if not any(similarity[i][j] > threshold for j in kept):
            kept.append(i)
    return kept


def solution_value(pass_rate: float, llm_score: float, context: RpmContext) -> float:
    """Eq. 6 on the 0-10 scale: γ·10·pass rate + (1-γ)·LLM score."""
    return context.rpm_gamma * 10 * pass_rate + (1 - context.rpm_gamma) * llm_score


def backed_up(nodes: dict[str, NodeRecord], leaf: str, value: float,
              rule: Literal["paper", "released"]) -> dict[str, NodeRecord]:
    """One more visit for every node on the path, and its value: 'paper' (Eq. 3) the mean of the returns it has
    received (an unvisited node's prior is replaced by the first); 'released': the simulated node's V moves
    halfway to the value and each ancestor's V becomes the visit-weighted mean of its children's V."""
    if rule == "paper":
        updates = {}
        for node_id in search.path_to(nodes, leaf):
            visits = nodes[node_id].get("visits", 0)
            mean = (nodes[node_id].get("value", 0.0) * visits + value) / (visits + 1)
            updates[node_id] = {"value": mean, "visits": visits + 1}
        return updates
    updates = {leaf: {"value": 0.5 * nodes[leaf].get("value", 0.0) + 0.5 * value,
                      "visits": nodes[leaf].get("visits", 0) + 1}}
    view = {**nodes, leaf: {**nodes[leaf], **updates[leaf]}}
    for node_id in reversed(search.path_to(nodes, leaf)[:-1]):
        kids = search.children(view, node_id)
        weight = sum(k.get("visits", 0) for k in kids)
        mean = sum(k.get("value", 0.0) * k.get("visits", 0) for k in kids) / weight if weight else 0.0
        updates[node_id] = {"value": mean, "visits": view[node_id].get("visits", 0) + 1}
        view[node_id] = {**view[node_id], **updates[node_id]}
    return updates


def final_choice(nodes: dict[str, NodeRecord], rule: Literal["paper", "released"]) -> str | None:
    """The node ending a passing roll-out with the highest value (the released code's; the paper is silent), else
    the highest-valued leaf ('paper', ties to the earliest made) or node of any depth ('released'). 'released' walks
    the tree as its code does, depth first: the first passing node of the highest value
    (``find_best_final_code_node``), else the last node of the highest value, the root included (``getBestV``)."""
    if rule == "released":
        walk = search.preorder(nodes, ROOT)
        chosen = kit.best((n for n in walk if n.get("passing")), key=lambda n: n.get("value", 0.0))
        if chosen is None:
            chosen = kit.best(reversed(walk), key=lambda n: n.get("value", 0.0))
        return chosen["id"] if chosen and chosen["id"] != ROOT else None
    steps = sorted((n for n in nodes.values() if n["id"] != ROOT), key=lambda n: n["order"])
    passing = [n for n in steps if n.get("passing")]
    parents = {n.get("parent") for n in steps}
    chosen = kit.best(passing or [n for n in steps if n["id"] not in parents], key=lambda n: n.get("value", 0.0))
    return chosen["id"] if chosen else None


# --- nodes ----------------------------------------------------------------------------------------------

def _sampled(model: BaseChatModel, context: RpmContext, problem: Problem, *purpose: object) -> BaseChatModel:
    """The model bound to RPM-MCTS's sampling temperature with a seed of its own (reruns are reproducible)."""
    seed = zlib.crc32(":".join(map(str, (problem["id"], *purpose))).encode()) % 2**31
    return model.bind(temperature=context.rpm_temperature, seed=seed)


def setup(state: RpmState, runtime: Runtime[RpmContext], model: BaseChatModel | None = None) -> dict:
    """Check the knowledge base (it must not hold this problem), classify the problem's topic, plant the root."""
    context = kit.settings(runtime, CONTEXT)
    problem = state["problem"]
    knowledge = _knowledge(context)
    update: dict = {"nodes": {ROOT: kit.root_node()}, "topic": None}
    if knowledge is not None:
        held = knowledge.duplicate_of(problem["prompt"], problem["id"])
        if held:
            raise KnowledgeError(f"the knowledge base {knowledge.path} holds this problem ({held['source']} "
                                 f"{held['id']}, {held['why']}): build it from a split other than the one you "
                                 "evaluate")
        llm = kit.chat_model(context, model)
        if context.rpm_topic_temperature != context.temperature:
            llm = llm.bind(temperature=context.rpm_topic_temperature, seed=0)
        reply = thinker.classify_topic(llm, kit.prompt(context, "thinker_rpm"), question(problem),
                                       released=context.rpm_layout == "released")
        topic = reply.value if reply.parsed else None  # unreadable: the whole KB, as the released code searches
        held_problems = knowledge.topics().get(topic, 0) if topic else sum(knowledge.topics().values())
        kit.emit("topic", topic=topic, kb_problems=held_problems)
        if not held_problems:
            kit.emit("kb_topic_empty", topic=topic)  # K is 0 for every step of this search
        update.update(topic=topic, cost=reply.cost)
        update["nodes"][ROOT].update(topic=topic, kb_problems=held_problems)  # the KB filter it implies
    return update


def select(state: RpmState, runtime: Runtime[RpmContext]) -> dict:
    """From the root, follow the best-scoring child while the node is expanded; stop without steps for a rollout."""
    context = kit.settings(runtime, CONTEXT)
    if kit.steps_left(state) < 4:  # expand, simulate, backpropagate, finalize (revise only when there is room)
        return {"stop": kit.STEP_LIMIT}
    nodes, path = state["nodes"], [ROOT]
    rng = random.Random(f"{state['problem']['id']}:{state['rollouts']}")
    while nodes[path[-1]].get("expanded") and (child := best_child(nodes, path[-1], context, rng)):
        path.append(child)
    kit.emit("selected", node=path[-1], path=path)
    return {"path": path}


def expand(state: RpmState, runtime: Runtime[RpmContext], model: BaseChatModel | None = None) -> dict:
    """Propose ``rpm_width`` next steps one after another, drop near-duplicates, value the rest (KB + critic)."""
    context = kit.settings(runtime, CONTEXT)
    problem, nodes, leaf = state["problem"], state["nodes"], state["path"][-1]
    llm, text = kit.chat_model(context, model), question(problem)
    steps, costs, proposals = steps_on(nodes, state["path"]), [], []
    released, prompt = context.rpm_layout == "released", kit.prompt(context, "thinker_rpm")
    path = released_path(nodes, state["path"])
    for i in range(context.rpm_width):
        shown = dict(steps=path or "None\n", siblings=released_history(prompt, proposals, len(steps) + 1),
                     reflection=nodes[leaf].get("reflection", "") or "None\n", released_path=path) if released \
            else dict(steps=steps, siblings=proposals, reflection=nodes[leaf].get("reflection", ""))
        reply = thinker.next_step(_sampled(llm, context, problem, leaf, state["rollouts"], i), prompt, text, **shown)
        costs.append(reply.cost)
        if reply.value or released:  # the released proposer keeps an unreadable step too, as a blank one
            proposals.append(reply.value)
    actions = [released_action(p, len(steps) + 1) for p in proposals] if released else proposals
    kept = list(range(len(proposals)))
    if context.rpm_filter and len(proposals) > 1:
        kept = kept_siblings(_similarities(context, actions), context.rpm_similarity)
    if released:  # the released children are keyed by their text: a repeated one is added once
        kept = [i for n, i in enumerate(kept) if actions[i] not in {actions[k] for k in kept[:n]}]
    knowledge, base, children = _knowledge(context), kit.next_order(nodes), {}
    for j, i in enumerate(kept):
        path_steps = [*steps, f"Step {len(steps) + 1}: {proposals[i]}"]
        scored = {}
        if released:  # the child's released text: the query, and (stripped) what the critic reads
            child_text = f"{path}\n{actions[i]}"
            query, judged_steps = child_text, [child_text.strip()]
            scored = {"scored_text": child_text}
            earlier = scored_before(nodes, child_text)
        else:
            query, judged_steps, earlier = "\n".join(path_steps), path_steps, None
        if earlier is not None:  # the released step values are cached by the path's text: no second call
            k, score = earlier.get("kb_reward", 0.0), earlier["step_score"]
        else:
            k = knowledge.reward(text + "\n" + query, state["topic"]) if knowledge else 0.0
            judged = critic.score_steps(_sampled(llm, context, problem, leaf, state["rollouts"], "critic", j),
                                        kit.prompt(context, "critic_rpm"), text.strip() if released else text,
                                        steps=judged_steps)  # the released critic reads the problem stripped
            costs.append(judged.cost)
            score = judged.value
        child = kit.new_node(base + j, parent=nodes[leaf], kind="step", text=proposals[i], kb_reward=k,
                             step_score=score, value=initial_value(score, k, context), visits=0, **scored)
        children[child["id"]] = child
    dropped = len(proposals) - len(kept)
    if dropped:
        kit.emit("filtered", node=leaf, dropped=dropped)
    return {"nodes": {**children, leaf: {"expanded": True}}, "new_steps": list(children), "cost": total_cost(costs)}


def simulate(state: RpmState, runtime: Runtime[RpmContext], model: BaseChatModel | None = None) -> dict:
    """Roll the best new step out to complete steps, implement and test them, score the solution; on failure
    locate the first wrong step, graft the correct roll-out steps and keep the reflection."""
    context = kit.settings(runtime, CONTEXT)
    problem, nodes, leaf = state["problem"], state["nodes"], state["path"][-1]
    rng = random.Random(f"{problem['id']}:{state['rollouts']}:simulate")
    chosen = best_child(nodes, leaf, context, rng, among=state["new_steps"])
    if chosen is None:  # no new step to evaluate: back up the leaf's own value (Alg. 1)
        return {"simulated": leaf if leaf != ROOT else None, "q": nodes[leaf].get("value", 0.0), "failure": None}
    llm = kit.chat_model(context, model)
    steps = steps_on(nodes, search.path_to(nodes, chosen))
    tried = _attempt(problem, context, llm, nodes, chosen, steps, purpose=("roll", state["rollouts"]))
    update = {"nodes": {chosen: tried["record"]}, "simulated": chosen, "q": tried["q"], "failure": None}
    if tried["success"]:
        return {**update, **_solved(state, context, nodes, chosen, tried, update["nodes"]),
                "cost": total_cost(tried["costs"])}
    if not context.rpm_exec_reward:  # the released ablation: the LLM's score alone, nothing located or revised
        return {**update, "cost": total_cost(tried["costs"])}
    costs, located = tried["costs"], None
    if tried["passed"] and not context.rpm_rerollout:  # Alg. 1: only a failing roll-out is revised
        update["nodes"][chosen].update(passing=True, final_code=tried["code"])  # a candidate for the final pick
        return {**update, "cost": total_cost(costs)}
    if tried["passed"]:  # every public test passes but the LLM doubts it: keep all of it, try once more
        keep, analysis = len(tried["rolled"]), tried["analysis"]
    else:
        debug = _debug_text(problem, tried["code"], tried["result"], tried["analysis"], context, llm, costs)
        released = context.rpm_layout == "released"
        found = critic.locate_error(_sampled(llm, context, problem, chosen, state["rollouts"], "locate"),
                                    kit.prompt(context, "critic_rpm"), question(problem), steps=tried["every"],
                                    code=tried["code"], debug=debug, released=released,
                                    fallback=released_fallback(len(tried["every"]), len(steps)) if released
                                    else len(steps))
        costs.append(found.cost)
        located = found.value
        # the evaluator's analysis, or the locator's where it is empty (released: as it is, even empty)
        analysis = found.analysis if context.rpm_reflection == "locator" \
            else tried["analysis"] if released else tried["analysis"] or found.analysis
        # the roll-out's steps before the first wrong one (released: a number out of range sliced as released)
        keep = len(tried["every"][:located - 1][len(steps):]) if released else max(0, located - 1 - len(steps))
        kit.emit("located", node=chosen, step=located, grafted=keep)
    grafted = _graft(nodes, chosen, tried["rolled"][:keep], tried["q"])
    update["nodes"].update(grafted)
    if grafted:  # the kept steps are part of the tree now: selection goes through them
        update["nodes"][chosen]["expanded"] = True
    last = list(grafted)[-1] if grafted else chosen
    if tried["passed"]:
        update["nodes"].setdefault(last, {}).update(passing=True, final_code=tried["code"])
    for node_id in [*search.path_to(nodes, chosen)[1:], *grafted]:  # the reflection goes to the path
        update["nodes"].setdefault(node_id, {})["reflection"] = analysis
    update["failure"] = {"code": tried["code"], "located": located, "leaf": last}
    return {**update, "reflection": analysis, "cost": total_cost(costs)}


def revise(state: RpmState, runtime: Runtime[RpmContext], model: BaseChatModel | None = None) -> dict:
    """After a failed roll-out (released code): rewrite the simulated step when it is the wrong one (node edit),
    then roll out once more from the kept steps with the wrong code and the reflection. A re-roll-out passing the
    public tests is grafted like a roll-out (ending the search when the LLM scores it high enough, else kept as a
    passing path for the final pick); the reflection left on the path is its program and the evaluator's
    analysis."""
    context = kit.settings(runtime, CONTEXT)
    problem, nodes, failure, chosen = state["problem"], state["nodes"], state["failure"], state["simulated"]
    llm, text = kit.chat_model(context, model), question(problem)
    wrong, updates, costs = f"{failure['code']}\n{state['reflection']}", {}, []  # the released code + "\n" + reflection
    own_steps = steps_on(nodes, search.path_to(nodes, chosen))
    if context.rpm_edit and failure["located"] == len(own_steps):  # the wrong step is the simulated one
        released = context.rpm_layout == "released"
        shown = released_path(nodes, search.path_to(nodes, chosen)) if released else own_steps
        edit = thinker.edit_step(_sampled(llm, context, problem, chosen, state["rollouts"], "edit"),
                                 kit.prompt(context, "thinker_rpm"), text, steps=shown, wrong=wrong,
                                 released=released)
        costs.append(edit.cost)
        if edit.value or (released and edit.value is not None):
            step = thinker.edited_step_text(edit.value) if released else edit.value
            kit.emit("edited", node=chosen, old=nodes[chosen]["text"], new=step)
            updates[chosen] = {"text": step, "replaced_thought": nodes[chosen]["text"],
                               **({"action": edit.value} if released else {})}
    if not context.rpm_rerollout:
        return {"nodes": updates, "cost": total_cost(costs)}
    view = merge_nodes(nodes, updates)
    leaf = failure["leaf"]
    tried = _attempt(problem, context, llm, view, leaf, steps_on(view, search.path_to(view, leaf)),
                     purpose=("reroll", state["rollouts"]), wrong=wrong)
    costs += tried["costs"]
    # the program rolled out from the leaf is kept there, as a roll-out's is on its node, unless the leaf already
    # holds a program passing the public tests (one the re-roll-out must not replace)
    keeps_own = holds_passing(view[leaf])
    if not keeps_own:
        updates = merge_nodes(updates, {leaf: tried["record"]})
    if tried["success"]:
        held = tried["record"] if keeps_own else {}  # the program the leaf could not take
        return {"nodes": updates, **_solved(state, context, view, leaf, tried, updates, held),
                "rerolled": {"node": leaf, "q": tried["q"]}, "cost": total_cost(costs)}
    grafted = {}
    if tried["passed"]:  # every public test passes but the LLM doubts it: grafted and kept, as a roll-out's is
        grafted = _graft(view, leaf, tried["rolled"], tried["q"])
        last = list(grafted)[-1] if grafted else leaf
        held = tried["record"] if keeps_own and grafted else {}  # the program the leaf could not take
        updates = merge_nodes(updates, {**grafted, **({leaf: {"expanded": True}} if grafted else {})})
        updates = merge_nodes(updates, {last: {**held, "passing": True, "final_code": tried["code"]}})
    # the released reflection after a re-roll-out: its program and the evaluator's analysis, on the path (the
    # released text joins them even when the analysis is empty, leaving the program's line break)
    if context.rpm_layout == "released":
        reflection = f"{tried['code']}\n{tried['analysis']}"
    else:
        reflection = "\n".join(text for text in (tried["code"], tried["analysis"]) if text) or state["reflection"]
    for node_id in [*search.path_to(view, leaf)[1:], *grafted]:
        updates = merge_nodes(updates, {node_id: {"reflection": reflection}})
    return {"nodes": updates, "rerolled": {"node": leaf, "q": tried["q"]}, "reflection": reflection,
            "cost": total_cost(costs)}


def rerolled_return(context: RpmContext) -> str:
    """How a re-roll-out's value is backed up (``rpm_rerollout_return``, 'auto' resolved by the selection rule)."""
    if context.rpm_rerollout_return != "auto":
        return context.rpm_rerollout_return
    return "replace" if context.rpm_selection == "released" else "own"


def backpropagate(state: RpmState, runtime: Runtime[RpmContext]) -> dict:
    """Back the roll-out's value up from the simulated step, and a re-roll-out's (``rerolled_return``): as a return
    of its own from the node it started from, or in place of the roll-out's, from the simulated step. Count the
    rollout; stop at the budget or the step limit."""
    context = kit.settings(runtime, CONTEXT)
    simulated, rerolled = state.get("simulated"), state.get("rerolled")
    if not simulated:
        returns = []
    elif rerolled_return(context) == "replace":
        returns = [(simulated, rerolled["q"] if rerolled else state["q"])]
    else:
        returns = [(simulated, state["q"])] + ([(rerolled["node"], rerolled["q"])] if rerolled else [])
    updates: dict[str, NodeRecord] = {}
    for node_id, value in returns:
        updates = merge_nodes(updates, backed_up(merge_nodes(state["nodes"], updates), node_id, value,
                                                 context.rpm_selection))
    rollouts = state["rollouts"] + 1
    kit.emit("backpropagated", node=simulated, value=round(returns[-1][1], 3) if returns else None, rollout=rollouts)
    stop = state.get("stop")
    if rollouts >= context.rpm_rollouts:
        stop = "budget_exhausted"
    elif kit.steps_left(state) < 5:  # select, expand, simulate, backpropagate, finalize
        stop = kit.STEP_LIMIT
    return {"nodes": updates, "rollouts": rollouts, "stop": stop, "simulated": None, "rerolled": None}


def finalize(state: RpmState, runtime: Runtime[RpmContext], model: BaseChatModel | None = None) -> dict:
    """Return the passing roll-out's code; else implement the chosen node's path once more (``final_choice``)."""
    context = kit.settings(runtime, CONTEXT)
    if state.get("solved") or state.get("succeeded"):
        node = state["nodes"][state.get("succeeded") or state["solved"]]  # the first success
        return kit.finish(state, node["id"], node["final_code"], node["execution"], "solved")
    reason = state.get("stop") or "budget_exhausted"
    if kit.failed(state):  # a model call failed for good: the best program tested so far
        tested = [n for n in state["nodes"].values() if n.get("code")]
        return kit.finish_node(state, kit.best(tested, key=lambda n: n.get("value", 0.0))["id"] if tested else None,
                               reason)
    chosen = final_choice(state["nodes"], context.rpm_selection)
    if chosen is None:
        return kit.finish_node(state, None, reason)
    problem = state["problem"]
    path = search.path_to(state["nodes"], chosen)
    thoughts = released_path(state["nodes"], path) if context.rpm_layout == "released" else \
        "\n".join(steps_on(state["nodes"], path))
    program = solver.write_code(_sampled(kit.chat_model(context, model), context, problem, chosen, "final"),
                                kit.prompt(context, "solver_rpm"), problem, thoughts=thoughts, shown=question(problem),
                                released=context.rpm_layout == "released")
    _, tested = _run(problem, program.value, context, chosen)
    out = kit.finish(state, chosen, program.value, tested["execution"], reason)
    return {**out, "nodes": {chosen: tested}, "cost": {**program.cost, **kit.PROGRAM_RUN}}


# --- helpers ----------------------------------------------------------------------------------------------

def holds_passing(node: NodeRecord) -> bool:
    """True when a node holds a program passing the public tests, which a later roll-out must not replace."""
    return bool(node.get("passing")) or (bool(node.get("code")) and kit.passes_public(node.get("execution")))


def _run(problem: Problem, code: str, context: RpmContext, node_id: str) -> tuple[ExecutionResult, dict]:
    """Run a program on the public tests (``kit.run_program``); under ``rpm_results_text=released`` judged as the
    released executor judges it: what it reads as the program (a reply whose python block is never closed is the
    text after its fence), after its import lines. The node keeps the program as written."""
    judged = judged_as_released(code) if context.rpm_results_text == "released" else None
    return kit.run_program(problem, code, context, node_id, judged=judged)


def _attempt(problem: Problem, context: RpmContext, llm: BaseChatModel, nodes: dict[str, NodeRecord], leaf: str,
             steps: list[str], *, purpose: tuple, wrong: str | None = None) -> dict:
    """Roll ``steps`` out to complete steps, implement them, run the public tests, let the LLM score it."""
    text = question(problem)
    shown = None
    if context.rpm_layout == "released":
        path = released_path(nodes, search.path_to(nodes, leaf))
        shown = path if wrong is not None else path or "None\n"
    rolled = thinker.full_steps(_sampled(llm, context, problem, leaf, *purpose), kit.prompt(context, "thinker_rpm"),
                                text, steps=steps, wrong=wrong, shown=shown)
    costs, thoughts, new_steps = [rolled.cost], "\n".join(rolled.value.written), rolled.value.rolled
    if context.rpm_extract_steps:  # the released extractor's answer is what the code writer and the tree get
        extracted = thinker.extract_steps(_sampled(llm, context, problem, leaf, *purpose, "extract"),
                                          kit.prompt(context, "thinker_rpm"), rolled.raw)
        costs.append(extracted.cost)
        # the evaluator and the locator read the extractor's steps as written, and those past the path (by
        # position, as released) are the rolled ones, each keeping its text as written for the released layout
        thoughts, every = extracted.raw, thinker.step_tags(extracted.raw)
        new_steps = [{"text": thinker.tag_step_text(tag), "action": tag} for tag in every[len(steps):]]
    else:
        new_steps = [{"text": step} for step in new_steps]
        every = steps + [f"Step {len(steps) + i}: {s['text']}" for i, s in enumerate(new_steps, 1)]
    program = solver.write_code(_sampled(llm, context, problem, leaf, *purpose, "code"),
                                kit.prompt(context, "solver_rpm"), problem, thoughts=thoughts, shown=text,
                                released=context.rpm_layout == "released")
    result, tested = _run(problem, program.value, context, leaf)
    kit.keep({"nodes": {} if holds_passing(nodes[leaf]) else {leaf: tested}, "cost": kit.PROGRAM_RUN})
    pass_rate = result.pass_rate if result.total else 1.0  # no public tests: the evaluator decides
    shown = results_shown(problem, program.value, result, context) if context.rpm_exec_reward else "(not run)"
    judged = critic.evaluate_solution(_sampled(llm, context, problem, leaf, *purpose, "eval"),
                                      kit.prompt(context, "critic_rpm"), text, steps=every, code=program.value,
                                      results=shown)
    if not context.rpm_exec_reward:
        pass_rate = 1.0 if judged.value >= context.rpm_success else 0.0  # the search sees the LLM only
    q = solution_value(pass_rate, judged.value, context) if context.rpm_exec_reward else judged.value
    kit.emit("reward", node=leaf, pass_rate=round(pass_rate, 3), llm=judged.value, value=round(q, 3))
    return {"rolled": new_steps, "every": every, "code": program.value, "result": result, "q": q,
            "analysis": judged.analysis, "passed": pass_rate == 1.0,
            "success": pass_rate == 1.0 and judged.value >= context.rpm_success,
            "record": {**tested, "llm_score": judged.value},
            "costs": [*costs, {**program.cost, **kit.PROGRAM_RUN}, judged.cost]}


def _solved(state: RpmState, context: RpmContext, nodes: dict[str, NodeRecord], leaf: str, tried: dict,
            updates: dict, held: dict | None = None) -> dict:
    """The update that ends the search: the passing roll-out's steps grafted below ``leaf``, its program kept
    (``held``: its whole record, on the last grafted step, when ``leaf`` keeps a program of its own; on ``leaf``
    itself, in place of that program, when no step was grafted, so the node's program is the one returned); while
    ``min_candidates`` asks for more passing programs, the first success is kept and the search goes on."""
    grafted = _graft(nodes, leaf, tried["rolled"], tried["q"])
    updates.update(grafted)
    if grafted:  # as after a failed roll-out: selection goes down the grafted steps
        updates.setdefault(leaf, {})["expanded"] = True
    solved = list(grafted)[-1] if grafted else leaf
    updates.setdefault(solved, {}).update({**(held or {}), "passing": True,
                                           "final_code": tried["code"], "execution": tried["record"]["execution"],
                                           "status": tried["record"]["status"]})
    if kit.wants_more(merge_nodes(nodes, updates), context):
        return {"succeeded": state.get("succeeded") or solved}
    return {"solved": solved}


def _graft(nodes: dict[str, NodeRecord], parent: str, steps: list[dict], value: float) -> dict[str, NodeRecord]:
    """Roll-out steps (each its node's ``text``, and ``action`` when written otherwise) as a chain of nodes below
    ``parent`` (value and one visit each, all but the last expanded)."""
    grafted: dict[str, NodeRecord] = {}
    base, above = kit.next_order(nodes), nodes[parent]
    for i, step in enumerate(steps):
        node = kit.new_node(base + i, parent=above, kind="step", **step, value=value, visits=1,
                            expanded=i < len(steps) - 1, grafted=True)
        grafted[node["id"]] = above = node
    return grafted


def _debug_text(problem: Problem, code: str, result, analysis: str, context: RpmContext, llm: BaseChatModel,
                costs: list[dict]) -> str:
    """What the locator sees: the block-level analysis of a failing test (``rpm_ldb``), else the evaluator's (where
    that is empty, the test feedback; under ``rpm_layout=released`` as it is, as the released code passes it)."""
    if not context.rpm_exec_reward:  # the ablation: the search never sees the tests' results
        return analysis or "(not run)"
    if not context.rpm_ldb or result.all_passed or not result.total:
        return analysis if context.rpm_layout == "released" else analysis or feedback_text(result)
    trace, blocks = kit.analyze_failure(problem, code, result, context, llm, prompt_name="critic_rpm")
    if blocks is None:
        return f"{feedback_text(result)}\n{trace}"
    costs.append(blocks.cost)
    return f"{feedback_text(result)}\n{trace}\n{blocks.value}"


def results_shown(problem: Problem, code: str, result: ExecutionResult, context: RpmContext) -> str:
    """The public-test results the evaluator reads: codeforest's feedback text, or the released results list."""
    if context.rpm_results_text != "released" or problem["kind"] != "function" or not result.outcomes:
        return feedback_text(result)
    failing = [o.test for o in result.outcomes if not o.passed]
    failures = released_failures(code, failing, problem["entry_point"], label=RPM_LABEL,
                                 limit=context.test_timeout, backend=context.sandbox) if failing else []
    return results_text([o.passed for o in result.outcomes], failures)


def _similarities(context: RpmContext, texts: list[str]):
    knowledge = _knowledge(context)
    if knowledge is not None:
        return knowledge.similarities(texts)
    return cosine_matrix(_embedder(context).embed_documents(texts))


def _embedder(context: RpmContext):
    return embedder(context.kb_embedder, context.kb_embedder_base_url, context.kb_embedder_api_key_env)


def _knowledge(context: RpmContext) -> KnowledgeBase | None:
    """The run's knowledge base (None for the w/o-KB ablation); a missing one fails before any model call."""
    if not context.rpm_kb:
        return None
    return open_knowledge(context.kb_path or None, _embedder(context))


# --- wiring ---------------------------------------------------------------------------------------------

def after_simulate(state: RpmState, runtime: Runtime[RpmContext]) -> str:
    """Finalize on success; revise a failed roll-out (node edit, re-roll-out) when enabled; else back up."""
    context = kit.settings(runtime, CONTEXT)
    if state.get("solved") or state["stop"]:
        return "finalize"
    wants = context.rpm_edit or context.rpm_rerollout
    return "revise" if wants and state.get("failure") and kit.steps_left(state) >= 3 else "backpropagate"


def graph_builder(model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled RPM-MCTS graph; ``model`` replaces the context's model."""
    builder = kit.builder(STATE, CONTEXT)
    kit.add_nodes(builder, {"start": kit.starter(FRESH, recursion_limit, CONTEXT, roles), "setup": setup,
                            "select": select, "expand": expand, "simulate": simulate, "revise": revise,
                            "backpropagate": backpropagate, "finalize": finalize}, model)
    builder.add_edge(START, "start")
    builder.add_edge("start", "setup")
    builder.add_edge("setup", "select")
    builder.add_conditional_edges("select", lambda s: "finalize" if s["stop"] else "expand", ["expand", "finalize"])
    builder.add_edge("expand", "simulate")
    builder.add_conditional_edges("simulate", after_simulate, ["revise", "backpropagate", "finalize"])
    builder.add_conditional_edges("revise", lambda s: "finalize" if s.get("solved") else "backpropagate",
                                  ["backpropagate", "finalize"])
    builder.add_conditional_edges("backpropagate", lambda s: "finalize" if s["stop"] else "select",
                                  ["select", "finalize"])
    selection.add_selection(builder, model)
    return builder


def build_graph(checkpointer=None, *, model: BaseChatModel | None = None, name: str = "rpm_mcts"):
    """Compile RPM-MCTS; ``model`` overrides the context's model (library use, tests)."""
    return graph_builder(model).compile(checkpointer=checkpointer, name=name)


graph = build_graph()
