"""The search mathematics the MCTS graphs share: pure functions over the flat node table.

P-UCB (RethinkMCTS Eq.1-2, from PG-TD), UCT, selection down to a leaf, backpropagation with
Q = the maximum return (the paper) and, as an option, the released code's per-level discount.
Nothing here calls a model or mutates its input: every function returns values or node updates
to merge with ``merge_nodes``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from codeforest.graphs.state import NodeRecord

C_BASE = 10.0  # PG-TD's constants, which RethinkMCTS copies
C_EXPLORE = 4.0


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


def path_to(nodes: Mapping[str, NodeRecord], node_id: str) -> list[str]:
    """The ids from the top of the tree down to ``node_id``."""
    path = []
    current: str | None = node_id
    while current is not None:
        path.append(current)
        current = nodes[current].get("parent")
    return path[::-1]


def select_child(nodes: Mapping[str, NodeRecord], node_id: str, rule: str = "p_ucb", c_base: float = C_BASE,
                 c: float = C_EXPLORE) -> str | None:
    """The child with the highest score; ties go to the earliest child (the LLM's list order)."""
    kids = children(nodes, node_id)
    if not kids:
        return None
    parent_visits = nodes[node_id].get("visits", 0)

    def score(child: NodeRecord) -> float:
        if rule == "uct":
            return uct(child.get("q", 0.0), parent_visits, child.get("visits", 0), c)
        return p_ucb(child.get("q", 0.0), child.get("prior", 1.0), parent_visits, child.get("visits", 0), c_base, c)

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

    The return at the leaf is ``reward``; each level up multiplies it by ``gamma`` (1.0 in the
    paper; the released RethinkMCTS code uses 0.9). Returns the node updates.
    """
    updates: dict[str, NodeRecord] = {}
    value = reward
    for node_id in reversed(path_to(nodes, leaf)):
        node = nodes[node_id]
        visits = node.get("visits", 0)
        q = max(node.get("q", value), value) if visits else value
        updates[node_id] = {"visits": visits + 1, "q": q}
        value *= gamma
    return updates
