"""Choosing the final program when the public tests cannot tell (issue 21): pure rules over output matrices.

Each candidate is one distinct program of a search, with the method's own value for it, whether it passes
the public tests, and its output vector on the probe inputs (``tools.probes``). The selectors never see a
private test. ``public`` is each paper's own rule and stays the default; the others choose among the
public-passing candidates (all of them when none passes):
- ``agreement``: the largest group of identical output vectors (AlphaCode / MBR-exec);
- ``codet``: CodeT's dual agreement, group size x generated asserts the group passes.
Ties between groups go to the method's value, then the earliest program, and are recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codeforest.tools.probes import rejected


@dataclass(frozen=True)
class Candidate:
    """One distinct program of a search."""

    node: str
    order: int  # creation order: the earliest wins the last tie
    value: float  # the method's own value for it
    public: bool  # passes every public test
    outputs: tuple[str, ...] = ()  # its behaviour on the probe inputs
    asserts: frozenset[int] = field(default_factory=frozenset)  # generated asserts it passes (CodeT)


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
        def score(g):
            return len(g) * len(g[0].asserts)
    chosen, tie = choose_group(groups, score)
    width = min((len(c.outputs) for c in among), default=0)
    why = {"selector": rule, "inputs": len(inputs), "dropped_inputs": width - len(inputs),
           "groups": [{"nodes": [c.node for c in g], "size": len(g), "score": score(g)} for g in groups],
           "tie_broken": tie, "among": "public-passing" if any(c.public for c in candidates) else "all"}
    return _pick(chosen), why
