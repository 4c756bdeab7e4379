"""The search mathematics the MCTS graphs share: pure functions over the flat node table.

P-UCB (RethinkMCTS Eq.1-2, from PG-TD; CodePRM Eq.7-8), UCT, selection down to a leaf,
backpropagation with Q = the maximum return (the papers) and, as an option, the released code's
per-level discount. Nothing here calls a model or mutates its input: every function returns values
or node updates to merge with ``merge_nodes``.

Visits follow the released RethinkMCTS and CodePRM code: a node starts with ``visits = 1`` and each
rollout backpropagated through it adds one. N(s) of a parent is its ``visits``; N(s') of a child is
the number of returns it received, ``visits - 1``. So a parent's first selection (log 1 = 0) picks by
Q alone, and from its second on the priors count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from codeforest.graphs.state import NodeRecord

C_BASE = 10.0  # PG-TD's constants, which RethinkMCTS copies
C_EXPLORE = 4.0
NEW_VISITS = 1  # the released code's decision nodes start with one visit


def returns(node: NodeRecord) -> int:
    """How many rollout returns a node received: N(s') in P-UCB and UCT."""
    return node.get("visits", NEW_VISITS) - NEW_VISITS


def beta(parent_visits: int, c_base: float = C_BASE, c: float = C_EXPLORE) -> float:
    """β(s) = log((N(s) + c_base + 1) / c_base) + c."""
    return math.log((parent_visits + c_base + 1) / c_base) + c


def p_ucb(q: float, prior: float, parent_visits: int, child_visits: int, c_base: float = C_BASE,
          c: float = C_EXPLORE) -> float:
    """P-UCB(s, a) = Q(s, a) + β(s) · p(a|s) · √log N(s) / (1 + N(s')); no exploration while N(s) ≤ 1."""
    explore = math.sqrt(math.log(parent_visits)) if parent_visits > 1 else 0.0
    return q + beta(parent_visits, c_base, c) * prior * explore / (1 + child_visits)


def uct(q: float, parent_visits: int, child_visits: int, c: float = math.sqrt(2)) -> float:
    """UCT = Q + c · √(ln N(s) / N(s')); an unvisited child scores infinity."""
    if child_visits == 0:
        return math.inf
    return q + c * math.sqrt(math.log(max(parent_visits, 1)) / child_visits)


def children(nodes: Mapping[str, NodeRecord], node_id: str | None) -> list[NodeRecord]:
    """A node's children in creation order (``None``: the roots)."""
    return sorted((n for n in nodes.values() if n.get("parent") == node_id), key=lambda n: n.get("order", 0))


def preorder(nodes: Mapping[str, NodeRecord], node_id: str) -> list[NodeRecord]:
    """A node and everything below it, depth first, children in creation order."""
    found = [nodes[node_id]]
    for child in children(nodes, node_id):
        found += preorder(nodes, child["id"])
    return found


def path_to(nodes: Mapping[str, NodeRecord], node_id: str) -> list[str]:
    """The ids from the top of the tree down to ``node_id``."""
    path = []
    current: str | None = node_id
    while current is not None:
        path.append(current)
        current = nodes[current].get("parent")
    return path[::-1]


def thought_ids(nodes: Mapping[str, NodeRecord], path: list[str]) -> list[str]:
    """The nodes of a path that hold a thought: not the MCTS root, not an empty fallback thought (as released)."""
    return [i for i in path if nodes[i].get("kind") != "root" and nodes[i].get("text", "").strip()]


def thoughts_on(nodes: Mapping[str, NodeRecord], path: list[str]) -> list[str]:
    """The thoughts along a path, from the top."""
    return [nodes[i]["text"] for i in thought_ids(nodes, path)]


def thought_lines(thoughts: list[str]) -> str:
    """The thoughts as the released thought-tree searches append them to the problem: ``\\nThought: ...`` each."""
    return "".join(f"\nThought: {t.strip()}" for t in thoughts)


def released_action(thought: str) -> str:
    """The text the released thought-tree searches append to the state for a thought they read from a list."""
    return f"\nThought: {thought}"


def action_of(node: NodeRecord) -> str:
    """The text a thought node added to the released state: its ``action``, else the labelled thought."""
    return node.get("action", released_action(node.get("text", "")))


def state_text(nodes: Mapping[str, NodeRecord], path: list[str], released: bool = False) -> str:
    """The thoughts along a path as they follow the problem in the Solver's and the Thinker's prompts:
    ``thought_lines``, or (``released``) the text each thought node added to the released code's state as
    written (its ``action``: a blank fallback's line break, a rewritten thought's reply)."""
    if not released:
        return thought_lines(thoughts_on(nodes, path))
    return "".join(action_of(nodes[i]) for i in path if nodes[i].get("kind") != "root")


def released_numbered(nodes: Mapping[str, NodeRecord], path: list[str]) -> tuple[list[str], list[str]]:
    """The thought nodes of a path and their texts as the released CodePRM numbers them for its Verifier, locator
    and refine prompts: a state text of fewer than 3 tokens (a blank fallback) is left out, and a text holding
    ``Thought:`` is what follows its first one. Tokens are counted as words, signs and runs of white space
    (cl100k_base's count for such short texts)."""
    ids, texts = [], []
    for i in path:
        action = action_of(nodes[i])
        if nodes[i].get("kind") == "root" or len(re.findall(r"\w+|[^\w\s]|\s+", action)) < 3:
            continue
        ids.append(i)
        texts.append((action.split("Thought:")[1] if "Thought:" in action else action).strip())
    return ids, texts


def select_child(nodes: Mapping[str, NodeRecord], node_id: str, rule: str = "p_ucb", c_base: float = C_BASE,
                 c: float = C_EXPLORE) -> str | None:
    """The child with the highest score; ties go to the earliest child (the LLM's list order)."""
    kids = children(nodes, node_id)
    if not kids:
        return None
    parent_visits = nodes[node_id].get("visits", NEW_VISITS)

    def score(child: NodeRecord) -> float:
        if rule == "uct":
            return uct(child.get("q", 0.0), parent_visits, returns(child), c)
        return p_ucb(child.get("q", 0.0), child.get("prior", 1.0), parent_visits, returns(child), c_base, c)

    best = kids[0]
    for child in kids[1:]:
        if score(child) > score(best):  # strictly greater: the earlier child keeps a tie
            best = child
    return best["id"]


def select_leaf(nodes: Mapping[str, NodeRecord], root: str, rule: str = "p_ucb", c_base: float = C_BASE,
                c: float = C_EXPLORE) -> list[str]:
    """Walk down from ``root`` by the selection rule to a node without children; return the path."""
    path = [root]
    while (child := select_child(nodes, path[-1], rule, c_base, c)) is not None:
        path.append(child)
    return path


def backpropagate(nodes: Mapping[str, NodeRecord], leaf: str, reward: float,
                  gamma: float = 1.0) -> dict[str, NodeRecord]:
    """Visit counts +1 and Q = max(Q, return) from ``leaf`` up to the top.

    Each node's return is ``reward`` times ``gamma`` per level, the leaf's own included, as the
    released code discounts every edge (γ = 1.0 in the papers; 0.9 in the released RethinkMCTS and
    CodePRM code). A node's first return replaces its initial Q. Returns the node updates.
    """
    updates: dict[str, NodeRecord] = {}
    value = reward
    for node_id in reversed(path_to(nodes, leaf)):
        node = nodes[node_id]
        value *= gamma
        q = max(node.get("q", value), value) if returns(node) > 0 else value
        updates[node_id] = {"visits": node.get("visits", NEW_VISITS) + 1, "q": q}
    return updates
