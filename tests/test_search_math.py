"""graphs/search.py against hand-computed numbers."""

from __future__ import annotations

import math

import pytest

from codeforest.graphs.search import (
    backpropagate,
    beta,
    children,
    p_ucb,
    select_child,
    select_leaf,
    uct,
)
from codeforest.graphs.state import merge_nodes


def tree():
    """Visits as the released code counts them: 1 at creation plus one per return."""
    return {
        "r": {"id": "r", "parent": None, "order": 0, "visits": 4, "q": 0.6},
        "a": {"id": "a", "parent": "r", "order": 1, "prior": 0.7, "visits": 2, "q": 0.5},
        "b": {"id": "b", "parent": "r", "order": 2, "prior": 0.2, "visits": 3, "q": 0.6},
        "c": {"id": "c", "parent": "r", "order": 3, "prior": 0.1, "visits": 1, "q": 0.0},
        "a1": {"id": "a1", "parent": "a", "order": 4, "prior": 1.0, "visits": 2, "q": 0.5},
    }


def test_beta_and_p_ucb_by_hand():
    assert beta(0) == pytest.approx(math.log(1.1) + 4) == pytest.approx(4.0953102)
    assert beta(3) == pytest.approx(4.3364722)
    # Q + β(3) · 0.7 · √ln 3 / (1 + 1) = 0.5 + 4.3364722 · 0.7 · 1.0481471 / 2
    assert p_ucb(0.5, 0.7, 3, 1) == pytest.approx(2.0908413, abs=1e-6)
    assert p_ucb(0.5, 0.7, 1, 0) == 0.5  # log 1 = 0: no exploration on a first visit
    assert p_ucb(0.2, 0.5, 5, 1, c_base=1, c=0) == pytest.approx(0.2 + math.log(7) * 0.5 * math.sqrt(math.log(5)) / 2)


def test_uct():
    assert uct(0.5, 4, 0) == math.inf
    assert uct(0.5, 4, 2) == pytest.approx(0.5 + math.sqrt(2) * math.sqrt(math.log(4) / 2))


def test_selection_follows_p_ucb_and_ties_go_to_the_earliest():
    nodes = tree()
    scores = {k: p_ucb(nodes[k]["q"], nodes[k]["prior"], 4, nodes[k]["visits"] - 1) for k in "abc"}
    assert max(scores, key=scores.get) == "a" and select_child(nodes, "r") == "a"
    assert select_leaf(nodes, "r") == ["r", "a", "a1"]
    nodes["r"]["visits"] = 1  # a fresh node (log 1 = 0): Q decides, and a tie keeps list order
    nodes["b"]["q"] = nodes["a"]["q"] = 0.6
    assert select_child(nodes, "r") == "a"
    assert select_child(nodes, "r", rule="uct") == "c"  # UCT tries the unvisited child first
    assert select_child(nodes, "a1") is None and [n["id"] for n in children(nodes, "r")] == ["a", "b", "c"]


def test_one_return_is_enough_for_the_priors_to_count():
    nodes = {"r": {"id": "r", "parent": None, "order": 0, "visits": 1},
             "a": {"id": "a", "parent": "r", "order": 1, "prior": 0.2, "visits": 1, "q": 0.0},
             "b": {"id": "b", "parent": "r", "order": 2, "prior": 0.8, "visits": 1, "q": 0.0}}
    assert select_child(nodes, "r") == "a"  # N(s) = 1: every score is Q = 0, the first is kept
    nodes = merge_nodes(nodes, backpropagate(nodes, "a", 0.0))
    assert nodes["r"]["visits"] == 2 and nodes["a"]["visits"] == 2
    # N(s) = 2: a = 0 + β(2)·0.2·√ln 2/(1+1) = 0.355, b = β(2)·0.8·√ln 2/(1+0) = 2.839
    assert select_child(nodes, "r") == "b"


def test_backpropagation_keeps_the_maximum_and_counts_visits():
    nodes = tree()
    updates = backpropagate(nodes, "a1", 0.3)
    assert updates == {"a1": {"visits": 3, "q": 0.5}, "a": {"visits": 3, "q": 0.5}, "r": {"visits": 5, "q": 0.6}}
    nodes = merge_nodes(nodes, backpropagate(nodes, "a1", 0.9))
    assert [nodes[i]["q"] for i in ("a1", "a", "r")] == [0.9, 0.9, 0.9]
    fresh = backpropagate({**nodes, "c": {**nodes["c"], "q": 0.5}}, "c", 0.1)
    assert fresh["c"] == {"visits": 2, "q": 0.1}  # a node's first return replaces its Q, even below it


def test_backpropagation_discount_option():
    # the released code discounts every edge, the leaf's own included: 0.9, 0.81, 0.729
    updates = backpropagate(tree(), "a1", 1.0, gamma=0.9)
    assert updates["a1"]["q"] == pytest.approx(0.9) and updates["a"]["q"] == pytest.approx(0.81)
    assert updates["r"]["q"] == pytest.approx(0.729)


def test_thoughts_on_a_path_leave_out_the_root_and_empty_fallbacks():
    from codeforest.graphs.search import thought_ids, thoughts_on

    nodes = {"root": {"id": "root", "kind": "root", "text": ""}, "a": {"id": "a", "text": "Add one."},
             "b": {"id": "b", "text": "\n"}, "c": {"id": "c", "text": "Return it."}}
    assert thought_ids(nodes, ["root", "a", "b", "c"]) == ["a", "c"]
    assert thoughts_on(nodes, ["root", "a", "b", "c"]) == ["Add one.", "Return it."]
