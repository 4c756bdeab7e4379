"""The MCTS scaffold GVR (CodePRM) and RethinkMCTS share: the root with its first thoughts, thought children with
their priors, P-UCB selection from the root, and the end with the best program found. Each graph keeps its paper's
own rules: how thoughts are proposed, what a rollout does, how a program is valued."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from langchain_core.language_models import BaseChatModel

from codeforest.context import Context
from codeforest.graphs import kit, search
from codeforest.graphs.state import NodeRecord

ExpandChildren = Callable[[dict, Context, BaseChatModel, str, None], dict]


def expand_root(state: dict, context: Context, model: BaseChatModel, expand_children: ExpandChildren) -> dict:
    """The root and its first thoughts (``expand_children`` below the root, with no failing program)."""
    root = {kit.ROOT: kit.root_node(visits=search.NEW_VISITS)}
    update = expand_children({**state, "nodes": root}, context, model, kit.ROOT, None)
    return {"nodes": {**root, **update["nodes"]}, "cost": update["cost"]}


def thought_children(nodes: dict[str, NodeRecord], parent_id: str, items: Iterable[tuple[str, float]], base: int,
                     actions: list[str] | None = None, **fields) -> dict[str, NodeRecord]:
    """One new thought node below ``parent_id`` per ``(text, prior)``, numbered from ``base``, with a new node's
    visits and Q; ``actions`` the text each adds to the released state (``search.state_text``); ``fields`` are
    the method's own counters."""
    children: dict[str, NodeRecord] = {}
    for i, (text, prior) in enumerate(items):
        extra = {"action": actions[i]} if actions is not None else {}
        child = kit.new_node(base + i, parent=nodes[parent_id], kind="thought", text=text.strip() or text,
                             prior=prior, visits=search.NEW_VISITS, q=0.0, **extra, **fields)
        children[child["id"]] = child
    return children


def select_path(state: dict, c_base: float, c: float, *, steps_needed: int) -> list[str] | None:
    """The P-UCB path from the root down to a leaf, or ``None`` when fewer than ``steps_needed`` steps are left
    for one more rollout (the search then stops with ``step_limit``)."""
    if kit.steps_left(state) < steps_needed:
        return None
    path = search.select_leaf(state["nodes"], kit.ROOT, "p_ucb", c_base, c)
    kit.emit("selected", node=path[-1], path=path)
    return path


def best_program(programs: list[dict], score: str) -> dict | None:
    """The program with the highest ``score`` (the first score seen for a code string counts); ties go to the
    earliest."""
    first_seen: dict[str, dict] = {}
    for program in programs:
        first_seen.setdefault(program["code"], program)
    return kit.best(first_seen.values(), key=lambda p: p[score])


def finish_best(state: dict, chosen: dict | None) -> dict:
    """The search's output: ``chosen`` (a program record from ``best_program``), or no program; the stop reason
    the search recorded, else ``tree_exhausted``."""
    reason = state.get("stop") or "tree_exhausted"
    if chosen is None:
        return kit.finish(state, None, "", None, reason)
    return kit.finish(state, chosen["node"], chosen["code"], chosen["execution"], reason)
