"""Choosing the final program when the public tests cannot tell: pure rules over output matrices.

Each candidate is one distinct program of a search, with the method's own value for it, whether it passes
the public tests, and its output vector on the probe inputs (``tools.probes``). The selectors never see a
private test. ``public`` is each paper's own rule and stays the default; the others choose among the
public-passing candidates (all of them when none passes):
- ``agreement``: the largest group of identical output vectors (AlphaCode / MBR-exec);
- ``codet``: CodeT's dual agreement, group size x generated asserts the group passes (equal scores, as when
  no assert is kept, go to the larger group);
- ``differential``: S*'s pairwise choice: agreement's leading groups meet in a knock-out, each pair judged by
  the model on an input that separates them, in both orders (a judgement counts only when both agree).
Ties between groups go to the method's value, then the earliest program, and are recorded.

``add_selection`` puts the ``select_final`` node after a graph's own finalize: with a selector other than
``public`` it asks the Tester once, runs the distinct programs it may choose among on the probe inputs in the
sandbox and replaces the final program by the selector's choice, still reported by its public-test result. A
Tester or judge call that fails (or finds the token budget spent) is recorded; the selection goes on without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime

from codeforest.agents import judge as judges
from codeforest.agents import tester
from codeforest.agents.base import BudgetSpent, ModelFault
from codeforest.context import Context, shown_model
from codeforest.cost import total_cost
from codeforest.graphs import kit
from codeforest.graphs.state import NodeRecord, SearchState
from codeforest.tools.probes import behaviour, displayed, mutated_inputs, no_answer, probe, rejected


@dataclass(frozen=True)
class Candidate:
    """One distinct program of a search."""

    node: str
    order: int  # creation order: the earliest wins the last tie
    value: float  # the method's own value for it
    public: bool  # passes every public test
    outputs: tuple[str, ...] = ()  # its behaviour on the probe inputs, as the tests compare it (grouped by)
    asserts: frozenset[int] = field(default_factory=frozenset)  # generated asserts it passes (CodeT)
    shown: tuple[str, ...] = ()  # its outputs as printed or returned (what a judge sees); ``outputs`` if empty

    def output(self, index: int) -> str:
        """What it gave on probe input ``index``, as it gave it."""
        return (self.shown or self.outputs)[index]


def kept_inputs(candidates: list[Candidate]) -> list[int]:
    """The probe inputs to group by: those that most candidates do not raise or time out on."""
    width = min((len(c.outputs) for c in candidates), default=0)
    return [i for i in range(width) if not rejected([c.outputs[i] for c in candidates])]


def output_groups(candidates: list[Candidate], inputs: list[int]) -> list[list[Candidate]]:
    """Candidates grouped by their outputs on ``inputs``, each group in creation order, groups by first member."""
    groups: dict[tuple, list[Candidate]] = {}
    for candidate in sorted(candidates, key=lambda c: c.order):
        groups.setdefault(tuple(candidate.outputs[i] for i in inputs), []).append(candidate)
    return list(groups.values())


def pool(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates a selector chooses among: the public-passing ones, or all when none passes."""
    passing = [c for c in candidates if c.public]
    return passing or list(candidates)


def choose_group(groups: list[list[Candidate]], score) -> tuple[list[Candidate], bool]:
    """The group with the highest ``score``; ties by the best value in it, then the earliest program. Also
    whether a tie on the score had to be broken."""
    best = max(score(g) for g in groups)
    leaders = [g for g in groups if score(g) == best]
    chosen = min(leaders, key=lambda g: (-max(c.value for c in g), min(c.order for c in g)))
    return chosen, len(leaders) > 1


def _pick(group: list[Candidate]) -> Candidate:
    """Within a group of alike programs: the best value, then the earliest."""
    return min(group, key=lambda c: (-c.value, c.order))


def select(rule: str, candidates: list[Candidate]) -> tuple[Candidate, dict]:
    """The chosen candidate and why: selector, inputs used and dropped, groups and their sizes, tie broken."""
    if not candidates:
        raise ValueError("no candidate program to select from")
    if rule not in ("agreement", "codet"):
        raise ValueError(f"selector must be agreement or codet here, not {rule!r}")
    among = pool(candidates)
    inputs = kept_inputs(among)
    groups = output_groups(among, inputs)
    if rule == "agreement":
        def score(g):
            return len(g)
    else:
        kept = set(inputs)  # alike on these, so the group's members pass the same asserts among them

        def dual(g):
            return len(g) * len(g[0].asserts & kept)

        def score(g):  # equal dual scores (all 0 when no assert is kept) go to the larger group: agreement's rule
            return dual(g), len(g)
    chosen, tie = choose_group(groups, score)
    width = min((len(c.outputs) for c in among), default=0)
    why = {"selector": rule, "inputs": len(inputs), "dropped_inputs": width - len(inputs),
           "groups": [{"nodes": [c.node for c in g], "size": len(g),
                       "score": len(g) if rule == "agreement" else dual(g)} for g in groups],
           "tie_broken": tie, "among": "public-passing" if any(c.public for c in candidates) else "all"}
    return _pick(chosen), why


def separating_input(a: Candidate, b: Candidate, inputs: list[int]) -> int | None:
    """The first kept input on which two candidates behave differently: preferably one where the outputs a judge
    is shown differ (long outputs can differ only after the cut), then one where neither raises or times out."""
    differ = [i for i in inputs if a.outputs[i] != b.outputs[i]]
    return min(differ, default=None, key=lambda i: (a.output(i) == b.output(i),
                                                   no_answer(a.outputs[i]) or no_answer(b.outputs[i])))


def ranked_groups(groups: list[list[Candidate]]) -> list[list[Candidate]]:
    """Groups by size, then the best value in them, then their earliest program."""
    return sorted(groups, key=lambda g: (-len(g), -max(c.value for c in g), min(c.order for c in g)))


# (input index, output shown first, shown second) -> "first" | "second" | None (unreadable) | NOT_ASKED
Judge = Callable[[int, str, str], "str | None"]
NOT_ASKED = "not asked"  # the judge could not be called (a failed call before, or the token budget spent)


def knockout(groups: list[list[Candidate]], inputs: list[int], judge: Judge,
             top: int) -> tuple[list[Candidate], list[dict]]:
    """S*'s pairwise choice over the ``top`` leading groups: the leader meets each challenger on an input that
    separates them, judged in both orders; a judgement counts only when both orders agree, otherwise the
    comparison abstains and the larger (earlier-ranked) group stays (as it does when the judge cannot be
    asked). The winner and every comparison."""
    ranked = ranked_groups(groups)[:max(1, top)]
    champion, record = ranked[0], []
    for challenger in ranked[1:]:
        a, b = _pick(champion), _pick(challenger)
        index = separating_input(a, b, inputs)
        if index is None:
            continue
        forward = judge(index, a.output(index), b.output(index))
        backward = judge(index, b.output(index), a.output(index))
        if NOT_ASKED in (forward, backward):  # no call could be made: no judgement, no abstention
            verdict = "not judged"
        elif forward == "second" and backward == "first":
            verdict = "challenger"
        elif forward == "first" and backward == "second":
            verdict = "leader"
        else:
            verdict = "abstained"
        record.append({"leader": a.node, "challenger": b.node, "input": index, "answers": [forward, backward],
                       "verdict": verdict})
        if verdict == "challenger":
            champion = challenger
    return champion, record


def differential(candidates: list[Candidate], judge: Judge, top: int) -> tuple[Candidate, dict]:
    """The ``differential`` selector: agreement's groups, then the knock-out; why, with the abstention rate."""
    among = pool(candidates)
    inputs = kept_inputs(among)
    groups = output_groups(among, inputs)
    winner, comparisons = knockout(groups, inputs, judge, top)
    abstained = sum(1 for c in comparisons if c["verdict"] == "abstained")
    judged = sum(1 for c in comparisons if c["verdict"] != "not judged")
    width = min((len(c.outputs) for c in among), default=0)
    why = {"selector": "differential", "inputs": len(inputs), "dropped_inputs": width - len(inputs),
           "groups": [{"nodes": [c.node for c in g], "size": len(g), "score": len(g)} for g in groups],
           "comparisons": comparisons, "abstained": abstained,
           "abstention_rate": round(abstained / judged, 3) if judged else None,
           "tie_broken": len(groups) > 1 and len(ranked_groups(groups)[0]) == len(ranked_groups(groups)[1]),
           "among": "public-passing" if any(c.public for c in candidates) else "all"}
    return _pick(winner), why


# --- the graph node ------------------------------------------------------------------------------------

def distinct_programs(state: SearchState) -> list[dict]:
    """The search's tested programs, each text once at its earliest appearance, numbered in that order
    (``order``): every node's program and every program a graph lists in ``programs`` (so one a rethink or a
    refinement later replaced on its node is still there). Each: node id, order, code, execution, value."""
    nodes = state.get("nodes") or {}
    found = [((nodes.get(p["node"], {}).get("order", 0), i), p["node"], p)
             for i, p in enumerate(state.get("programs") or []) if p.get("code") and p.get("execution")]
    found += [((n["order"], float("inf")), n["id"], n) for n in nodes.values() if n.get("code") and "execution" in n]
    seen: dict[str, dict] = {}
    for _, node_id, item in sorted(found, key=lambda f: f[0]):
        if item["code"] not in seen:
            seen[item["code"]] = {"id": node_id, "code": item["code"], "execution": item["execution"],
                                  "value": own_value(item)}
    return [{**program, "order": k} for k, program in enumerate(seen.values())]


def choosable(programs: list[dict]) -> list[dict]:
    """The programs a selector chooses among: those passing the public tests, or all when none does."""
    return [p for p in programs if kit.passes_public(p["execution"])] or programs


def own_value(node: NodeRecord | dict) -> float:
    """The method's own value of a node or a listed program (its value, reward or public pass rate)."""
    for key in ("value", "reward"):
        if isinstance(node.get(key), int | float):
            return float(node[key])
    execution = node.get("execution") or {}
    return execution.get("passed", 0) / execution["total"] if execution.get("total") else 0.0


class ModelHelp:
    """The selector's model calls (the Tester, the judge): none once the search has failed or a call has; a
    failed call's message is kept and what was spent before it counted, so the selection goes on without it."""

    def __init__(self, context: Context, model: BaseChatModel | None, state: SearchState):
        self.context, self.model = context, model
        # the budget whose end closed the calls ('token_budget' or 'cost_budget'), else None
        self.budget_spent = state.get("model_error") if state.get("model_error") in kit.BUDGETS else None
        self.error = "the search ended on a model fault" if kit.failed(state) and not self.budget_spent else None
        self.costs: list[dict] = []
        self.spent: dict | None = None  # the ledger's total when a call failed (it holds every earlier call)

    @property
    def closed(self) -> bool:
        """True once no more calls may be made (a failed call, or the budget spent)."""
        return bool(self.error) or self.budget_spent

    def ask(self, call: Callable):
        """``call(llm)``'s reply value, or None when no call may be made or this one failed."""
        if self.closed:
            return None
        try:
            reply = call(self.chat_model())
        except BudgetSpent as fault:
            self.budget_spent, self.spent = fault.reason, fault.spent
            return None
        except ModelFault as fault:
            self.error, self.spent = str(fault), fault.spent
            kit.emit("selection_model_error", error=str(fault))
            return None
        self.costs.append(reply.cost)
        return reply.value

    def chat_model(self) -> BaseChatModel:
        """The search's model (the Tester's and the judge's own, where the run names them, take their calls)."""
        return kit.chat_model(self.context, self.model)

    def cost(self) -> dict:
        """What the selector's calls cost."""
        return self.spent if self.spent is not None else total_cost(self.costs)


def candidates_of(problem: dict, programs: list[dict], inputs: list[str], expected: list[str | None],
                  context: Context) -> list[Candidate]:
    """The programs (``distinct_programs``) as candidates, with their behaviour on the inputs (run in the
    sandbox)."""
    candidates = []
    for program in programs:
        shown, asserts = probe(problem, program["code"], inputs, expected=expected, timeout=context.test_timeout,
                               backend=context.sandbox)
        outputs = tuple(behaviour(o, stdio=problem["kind"] == "stdio") for o in shown)
        candidates.append(Candidate(program["id"], program["order"], program["value"],
                                    kit.passes_public(program["execution"]), outputs, asserts,
                                    tuple(displayed(o) for o in shown)))
    return candidates


def select_final(state: SearchState, runtime: Runtime[Context], model: BaseChatModel | None = None) -> dict:
    """Replace the final program by the selector's choice among the tree's distinct programs (``public``: no-op).

    Only the programs the selector may choose among run on the probe inputs (the public-passing ones, or all
    when none passes); when that is one program the choice is forced and nothing is asked or run."""
    context = kit.settings(runtime, Context)
    programs = distinct_programs(state)
    if context.selector == "public" or not programs:
        return {}
    problem = state["problem"]
    among = choosable(programs)
    help_ = ModelHelp(context, model, state)
    forced = len(among) == 1  # nothing to choose between: no Tester call, no probe input, no run
    written: list[dict] = []
    inputs: list[str] = []
    if not forced:
        if context.tester_inputs:
            written = help_.ask(lambda llm: tester.write_inputs(
                llm, kit.prompt(context, "tester"), problem, k=context.tester_inputs,
                codet=context.selector == "codet")) or []
        inputs = [w["input"] for w in written]
        inputs += [m for m in mutated_inputs(problem, context.selector_seed, context.mutated_inputs)
                   if m not in inputs]
    expected = [w["expected"] for w in written] + [None] * (len(inputs) - len(written))
    candidates = candidates_of(problem, among, inputs, expected, context)
    if context.selector == "differential":
        def judge(index: int, first: str, second: str) -> str | None:
            if help_.closed:
                return NOT_ASKED
            answer = help_.ask(lambda llm: judges.compare_outputs(llm, kit.prompt(context, "judge"), problem,
                                                                  given=inputs[index], first=first, second=second))
            return NOT_ASKED if help_.closed else answer

        chosen, why = differential(candidates, judge, context.selector_groups)
    else:
        chosen, why = select(context.selector, candidates)
    chosen_program, own_code = programs[chosen.order], state.get("final_code") or ""
    changed = chosen_program["code"] != own_code  # by text: a method may return its program from another node
    runs = len(among) if inputs else 0
    # the method's own choice stays in the result, so a harness can tell whether the selector fixed or broke it
    why.update(forced=forced, changed=changed, chosen_node=chosen.node, own_node=state.get("final_node"),
               own_code=own_code, tester_inputs=len(written), mutated_inputs=len(inputs) - len(written),
               programs=len(programs), probe_runs=runs, probe_inputs=inputs)
    entries, asked = context.role_entries(), kit.roles_called(context, set())
    why.update({f"{role}_model": shown_model(entries[role].model) for role in ("tester", "judge")
                if role in entries and role in asked})
    if context.selector == "codet":
        why["probe_expected"] = expected  # the Tester's expected value of each input (None: a mutated input)
    if help_.error and not forced:
        why["model_error"] = help_.error
    if help_.budget_spent and not forced:
        why[help_.budget_spent] = True  # the Tester or the judge was not asked: this budget was spent
    kit.emit("selected_final", node=chosen.node, selector=context.selector, changed=changed)
    cost = help_.cost()
    update: dict = {"cost": {**cost, "sandbox_runs": cost.get("sandbox_runs", 0) + runs}, "selection": why}
    if changed:
        update.update(final_node=chosen.node, final_code=chosen_program["code"],
                      public_pass_rate=kit.public_pass_rate(chosen_program["execution"]))
    return update


def add_selection(builder: StateGraph, model: BaseChatModel | None = None, after: str = "finalize") -> None:
    """End a graph with ``select_final`` after its own ``after`` node (a failed Tester or judge call is recorded
    in the selection, which goes on without it)."""
    kit.add_nodes(builder, {"select_final": select_final}, model, on_model_fault=END)
    builder.add_edge(after, "select_final")
    builder.add_edge("select_final", END)
