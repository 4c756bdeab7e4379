"""The state every search graph shares: the problem, a flat node table, the cost, the outcome.

Everything is plain JSON-able data, so state round-trips through checkpointers and the LangGraph
server. Nodes are upserted by id through ``merge_nodes`` so parallel ``Send`` branches can add
children safely and a rethink can overwrite one record in place. ``typing_extensions.TypedDict``
keeps the input, output and state JSON schemas buildable on Python 3.11.
"""

from __future__ import annotations

from typing import Annotated, Literal

from langgraph.managed import RemainingSteps
from typing_extensions import TypedDict

from codeforest.cost import Cost, add_cost
from codeforest.problems import Problem

NodeKind = Literal["root", "strategy", "thought", "step", "reflection", "code"]
NodeStatus = Literal["open", "aborted", "accepted", "refined", "failed", "passed", "unverified"]


class Execution(TypedDict, total=False):
    """A program's run on the public tests, as stored on its node (``ExecutionResult.summary()``)."""

    passed: int
    total: int
    pass_rate: float
    error: str | None
    wall_s: float


class NodeRecord(TypedDict, total=False):
    """One node of a search tree."""

    id: str
    parent: str | None
    depth: int
    kind: NodeKind
    order: int  # creation order (the MCTS root is 0); tie-breaks go to the lower
    status: NodeStatus
    text: str  # the strategy, thought or reflection
    action: str  # released_text: what the thought added to the released code's state, as written
    strategy: str  # CodeTree: the root strategy a node descends from
    prior: float  # MCTS: the thought's prior p(a|s)
    code: str
    reply: str  # code_shown='reply': the Solver's whole reply, which later prompts show
    written: str  # codetree_code_shown='written': the program as the model wrote it, which later prompts show
    execution: Execution
    feedback: str  # the feedback text given to the model
    verbal_feedback: str  # RethinkMCTS: failing tests with outputs, block trace and its analysis
    value: float
    visits: int
    q: float
    decision_reason: str  # CodeTree: why the search refined, aborted or accepted the node
    critic_score: int  # CodeTree: the Critic's 0-5 score of a failing node
    critic_verdict: bool  # CodeTree: the Critic's verdict on a node passing the visible tests
    reward: float  # MCTS: the reward of the node's program
    v_llm: float  # RethinkMCTS: the self-evaluation of a program passing every public test
    rethinks: int  # RethinkMCTS: how often the node's thought was rewritten
    replaced_thought: str  # RethinkMCTS: the thought a rethink replaced
    seed: int  # BESTER, resample: the sampling seed of the node's self-reflection or program
    kb_reward: float  # RPM-MCTS: the knowledge-base process reward K of the path ending here
    topic: str  # RPM-MCTS, on the root: the problem's topic, which filters the knowledge base
    step_score: float  # RPM-MCTS: the step critic's 0-10 score of the path ending here
    llm_score: float  # RPM-MCTS: the evaluator's 0-10 score of the roll-out simulated from here
    expanded: bool  # RPM-MCTS: the node's next steps were proposed
    grafted: bool  # RPM-MCTS: a roll-out step kept in the tree (before the first wrong one)
    reflection: str  # RPM-MCTS: the reflection on a failed roll-out from here (``rpm_reflection``)
    passing: bool  # RPM-MCTS: a roll-out through here passed every public test and the evaluator
    final_code: str  # RPM-MCTS: that roll-out's program
    prm_scores: list[float]  # GVR: the Verifier's score of each thought on the path, for this node's program
    prm_history: list[list[float]]  # GVR: the scores of the node's earlier programs, each before a refinement
    prm_unread: bool  # GVR-BoN: those scores are the 0.5 fallback of an unreadable Verifier reply
    refined: int  # GVR: how often the Verifier's flag had this thought rewritten


def merge_nodes(left: dict[str, NodeRecord] | None, right: dict[str, NodeRecord] | None) -> dict[str, NodeRecord]:
    """Upsert node records by id; a partial record updates only the fields it carries."""
    merged = dict(left or {})
    for node_id, record in (right or {}).items():
        merged[node_id] = {**merged.get(node_id, {}), **record}
    return merged


class SearchInput(TypedDict):
    """What a graph is invoked with: only the problem (public tests included, private never)."""

    problem: Problem


class SearchOutput(TypedDict, total=False):
    """What every graph returns."""

    final_code: str
    final_node: str | None
    stop_reason: str
    public_pass_rate: float | None  # None when the problem has no public tests: the program is unverified
    error: str | None  # why the search ended early when stop_reason is "model_error"
    nodes: Annotated[dict[str, NodeRecord], merge_nodes]
    cost: Annotated[Cost, add_cost]
    selection: dict | None  # why a selector other than the method's own chose the final program


class SearchState(SearchInput, SearchOutput, total=False):
    """Input, output, the steps left before the caller's recursion limit, and a model call that failed."""

    remaining_steps: RemainingSteps
    model_error: str | None  # set by a model-calling node's error handler (the message, or "token_budget"
    # when the budget is spent): the search heads for finalize


OUTPUT_KEYS = ("final_code", "final_node", "stop_reason", "public_pass_rate", "error", "nodes", "cost", "selection")
