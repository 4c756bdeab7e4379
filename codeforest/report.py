"""``codeforest report``: pass@1 with a 95% interval, cost per problem and per solve, and a plot."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from codeforest.bench import latest_records, read_results, run_label
from codeforest.cost import tokens_spent

PLOT = "pass_at_1_vs_tokens.png"
COST_PLOT = "pass_at_1_vs_cost.png"  # beside it when runs use several models or a cost budget
BUDGET_SETTINGS = ("token_budget", "cost_budget")  # a sweep's runs differ only in these: one curve
MARKDOWN = "report.md"


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default)."""
    if n == 0:
        return 0.0, 0.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(records: list[dict]) -> list[dict]:
    """One row per (graph, model): pass@1 and its interval, mean pass rate, tokens and calls. A graph run with
    other settings (an ablation) is its own row, its ``graph`` the run label, e.g. ``rethink_mcts
    rethink_rethink=false``. A problem whose graph raised counts as failed; its model cost, known only in part
    (the raising step's calls are lost), is left out of the means of tokens and calls."""
    groups: dict[tuple, list[dict]] = {}
    for record in latest_records(records):
        groups.setdefault((run_label(record), record.get("model")), []).append(record)
    rows = []
    for (graph, model), group in groups.items():
        n = len(group)
        solved = sum(bool(r.get("private_passed")) for r in group)
        costed = [r for r in group if not r.get("traceback")]  # a raised graph's record holds part of its cost
        tokens = sum(tokens_spent(r) for r in costed)
        priced = [r.get("cost") for r in costed]
        low, high = wilson_interval(solved, n)
        plus = [r for r in group if "plus_passed" in r]
        plus_solved = sum(bool(r["plus_passed"]) for r in plus)
        plus_low, plus_high = wilson_interval(plus_solved, len(plus)) if plus else (None, None)
        counted = [r for r in group if "public_passing_programs" in r and (r.get("tree_programs") or r.get("programs"))]
        rows.append({
            "graph": graph, "model": model, "problems": n, "solved": solved,
            "pass_at_1": solved / n, "ci_low": low, "ci_high": high,
            # EvalPlus's verdict (base + plus inputs), where the records have it: None otherwise
            "plus_problems": len(plus), "plus_solved": plus_solved if plus else None,
            "plus_pass_at_1": plus_solved / len(plus) if plus else None, "plus_ci_low": plus_low,
            "plus_ci_high": plus_high,
            "mean_pass_rate": sum(r.get("private_pass_rate") or 0.0 for r in group) / n,
            "whole_check_rates": sum(1 for r in group if counted_whole(r)),
            "mean_tokens": tokens / max(1, len(costed)),
            # the tokens at the run's prices (None when a record has no price, or predates them; 0 as mean_tokens
            # when every problem's graph raised, so that one such row keeps the other rows' comparison by cost)
            "mean_cost": (None if None in priced else sum(priced) / len(priced)) if priced else 0.0,
            "mean_calls": sum(r.get("llm_calls", 0) for r in costed) / max(1, len(costed)),
            "tokens_per_solved": tokens / solved if solved else None,
            "mean_wall_s": sum(r.get("wall_s", 0) for r in group) / n,
            # RethinkMCTS Table 3: the share of the tree's programs passing every public test, a rethought
            # node counted with its new program (None for records written before it was recorded)
            "public_pass_share": (sum(r["public_passing_programs"] for r in counted) /
                                  sum(r.get("tree_programs") or r["programs"] for r in counted)) if counted else None,
            "errors": sum(1 for r in group if r.get("error")),
            "budget": group[0].get("budget"),
            "series": run_label(group[0], leave_out=BUDGET_SETTINGS),
            "token_budget": (group[0].get("settings") or {}).get("token_budget"),
            "cost_budget": (group[0].get("settings") or {}).get("cost_budget"),
            "models": sorted({m for r in group for m in r.get("models") or {}}),
            "token_budget_stops": sum(1 for r in group if r.get("stop_reason") == "token_budget"),
        })
    return sorted(rows, key=lambda r: (r["graph"], str(r["model"])))


def counted_whole(record: dict) -> bool:
    """A record whose pass rate counts its private tests as one test, so it is its pass (0 or 1): a function
    problem's ``check`` run whole, as records of an earlier format did for every check (CHANGELOG.md) and newer ones
    do for a check that cannot be split into its asserts."""
    return record.get("private_tests") == 1


WHOLE_CHECK_MARK = "†"
WHOLE_CHECK_NOTE = (f"{WHOLE_CHECK_MARK} Mean pass rate counted per check block, not per assert: these records ran "
                    "each problem's private check as one test (every function-problem record of an earlier format, see "
                    "CHANGELOG.md; now only a check that cannot be split into its asserts), so "
                    "their pass rate is their pass, 0 or 1. \"k of n\": k of the run's n problems were counted so, "
                    "the rest per assert. Compare such a row with others by pass@1, not by mean pass rate.")


def pass_rate_cell(row: dict) -> str:
    """The mean pass rate, marked when some of its records counted the check as one test."""
    text = f"{100 * row['mean_pass_rate']:.1f}"
    whole = row.get("whole_check_rates") or 0
    if not whole:
        return text
    return f"{text}{WHOLE_CHECK_MARK}" + ("" if whole == row["problems"] else f" ({whole} of {row['problems']})")


def pass_rate_note(rows: list[dict]) -> str | None:
    """The footnote to a summary with a marked pass rate; None when no row is marked."""
    return WHOLE_CHECK_NOTE if any(r.get("whole_check_rates") for r in rows) else None


def curves(rows: list[dict], x: str = "mean_tokens") -> dict[tuple, list[dict]]:
    """The rows of each (graph and settings but the budget, model), by ``x`` (mean tokens): one curve each."""
    series: dict[tuple, list[dict]] = {}
    for row in rows:
        series.setdefault((row.get("series", row["graph"]), row["model"]), []).append(row)
    return {key: sorted(group, key=lambda r: r[x]) for key, group in series.items()}


MAX_SERIES = 6  # more series than this in one folder: one panel per method


def method_of(name: str) -> str:
    """The graph a series label starts with (``resample`` of ``resample resample_n=8``)."""
    return name.split(" ", 1)[0]


def panels(series: dict[tuple, list[dict]]) -> list[list[tuple]]:
    """The series' keys per panel: all in one when they are few, else one panel per method with several series and
    one shared panel for the methods run once."""
    keys = list(series)
    if len(keys) <= MAX_SERIES:
        return [keys]
    by_method: dict[str, list[tuple]] = {}
    for key in keys:
        by_method.setdefault(method_of(key[0]), []).append(key)
    several = [group for group in by_method.values() if len(group) > 1]
    single = [key for group in by_method.values() if len(group) == 1 for key in group]
    return several + ([single] if single else [])


def tokens_text(value: float, _position: object = None) -> str:
    """A token count as a tick label: 500, 2k, 1.5k, 10k, 1.2M."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def series_label(key: tuple, group: list[dict], *, strip: bool, one_model: bool) -> str:
    """A legend entry: the run (without its method inside the method's own panel), its model when the folder
    holds several, and the token budgets a curve runs through."""
    name, model = key
    label = (name.split(" ", 1)[1] if " " in name else "defaults") if strip else name
    if not one_model:
        label = f"{label} ({model})"
    if len(group) > 1:
        kind = "cost" if any(r.get("cost_budget") for r in group) else "token"
        budgets = sorted({r.get(f"{kind}_budget") for r in group}, key=lambda b: (b is None, b or 0))
        label += f", {kind} budgets " + ", ".join("none" if b is None else tokens_text(b) for b in budgets)
    return label


def panel_title(keys: list[tuple]) -> str:
    """A panel's method, or the methods of a shared panel."""
    return ", ".join(dict.fromkeys(method_of(name) for name, _ in keys))


def _draw_series(ax, group: list[dict], label: str, colour, marker: str, x: str = "mean_tokens"):
    """One run on the axes (``x``: its mean tokens or cost); returns its legend handle."""
    xs = [r[x] for r in group]
    ys = [100 * r["pass_at_1"] for r in group]
    if len(set(zip(xs, ys, strict=True))) > 1:  # one run at several token budgets: a curve, its interval a band
        line, = ax.plot(xs, ys, "-", marker=marker, color=colour, label=label, zorder=3)
        ax.fill_between(xs, [100 * r["ci_low"] for r in group], [100 * r["ci_high"] for r in group],
                        color=colour, alpha=0.12, linewidth=0)
        return line
    # one point, or budgets that never stopped the run (all at one point): the interval as an error bar
    err = [[ys[0] - 100 * group[0]["ci_low"]], [100 * group[0]["ci_high"] - ys[0]]]
    return ax.errorbar(xs[:1], ys[:1], yerr=err, fmt=marker, color=colour, capsize=4, markersize=7, label=label,
                       alpha=0.85, zorder=3)


def _limits(rows: list[dict], log: bool, x: str = "mean_tokens") -> tuple[tuple[float, float], tuple[float, float]]:
    """Axis ranges fitted to the data: tokens (or cost) with a margin, pass@1 to the tens around every interval."""
    xs = [r[x] for r in rows if not log or r[x] > 0] or [1.0]
    xlim = (min(xs) / 1.6, max(xs) * 1.6) if log else (0.0, 1.1 * max(xs) or 1.0)
    low = min(100 * r["ci_low"] for r in rows)
    high = max(100 * r["ci_high"] for r in rows)
    return xlim, (max(0.0, 10 * math.floor(low / 10 - 0.2)), min(100.0, 10 * math.ceil(high / 10 + 0.2)))


def _format_axes(ax, log: bool, xlim: tuple, ylim: tuple) -> None:
    from matplotlib import ticker

    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_minor_locator(ticker.LogLocator(base=10, subs=tuple(range(1, 10))))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(tokens_text))
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.grid(alpha=0.3, which="major")


def figure(rows: list[dict], x: str = "mean_tokens"):
    """pass@1 against mean tokens per problem (``x`` 'mean_cost': against the mean cost at the run's prices): a
    point with its 95% interval per run, or, for a run at several budgets, a curve through its budgets with the
    interval as a band; one colour and legend entry per run, and, past ``MAX_SERIES`` runs, one panel per method
    (shared axes) with every other run in grey behind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = curves(rows, x)
    groups = panels(series)
    one_model = len({r["model"] for r in rows}) == 1
    spread = [r[x] for r in rows if r[x] > 0]
    log = bool(spread) and max(spread) / min(spread) > 20  # a baseline and a tree search differ by magnitudes
    xlim, ylim = _limits(rows, log, x)
    columns = 1 if len(groups) == 1 else 2
    lines = math.ceil(len(groups) / columns)
    size = (12, 5.6) if columns == 1 else (13, 5.4 * lines)
    fig, axes = plt.subplots(lines, columns, figsize=size, dpi=110, squeeze=False, layout="constrained")
    colours = plt.get_cmap("tab10").colors
    for ax, keys in zip(axes.flat, groups, strict=False):
        strip = len(groups) > 1 and len({method_of(name) for name, _ in keys}) == 1
        handles = [_draw_series(ax, series[key], series_label(key, series[key], strip=strip, one_model=one_model),
                                colours[i % len(colours)], "osD^vP*X"[i % 8], x) for i, key in enumerate(keys)]
        others = [r for key in series if key not in keys for r in series[key]]
        if others:  # the panels share their axes: the other runs, in grey, set this one's among them
            handles.append(ax.scatter([r[x] for r in others], [100 * r["pass_at_1"] for r in others],
                                      s=18, color="#bbbbbb", zorder=1, label="other runs (in their own panels)"))
        _format_axes(ax, log, xlim, ylim)
        if len(groups) > 1:
            ax.set_title(panel_title(keys), loc="left", fontweight="bold")
        where = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0)} if columns == 1 else \
            {"loc": "upper center", "bbox_to_anchor": (0.5, -0.1)}
        ax.legend(handles=handles, frameon=False, **where)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    shown = "mean cost per problem (each model's tokens at its price per million)" if x == "mean_cost" else \
        "mean tokens per problem (prompt + completion)"
    fig.supxlabel(shown + (", log scale" if log else ""))
    fig.supylabel("pass@1 (%), 95% interval")
    fig.suptitle("pass@1 against cost")
    return fig


def plot(rows: list[dict], path: str | Path, x: str = "mean_tokens") -> Path:
    """Save ``figure(rows, x)`` as a PNG at ``path``."""
    fig = figure(rows, x)  # first: it picks the Agg backend before pyplot is imported here
    import matplotlib.pyplot as plt

    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


SUMMARY_COLUMNS = ("graph", "model", "budget", "problems", "pass@1 (95% CI)", "mean pass rate", "tokens/problem",
                   "calls/problem", "tokens/solved", "public-pass share", "errors")
PLUS_COLUMN = "plus pass@1 (95% CI)"  # EvalPlus's base + plus verdict, beside the base pass@1
COST_COLUMN = "cost/problem"  # at the runs' prices, beside the tokens (runs on several models or a cost budget)


def summary_table(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """The summary's header and cells; with a plus pass@1 column beside pass@1 when a run has EvalPlus verdicts."""
    columns, cells = list(SUMMARY_COLUMNS), [summary_cells(r) for r in rows]
    if any(r.get("plus_pass_at_1") is not None for r in rows):
        at = columns.index("pass@1 (95% CI)") + 1
        columns.insert(at, PLUS_COLUMN)
        for row, line in zip(rows, cells, strict=True):
            line.insert(at, "-" if row.get("plus_pass_at_1") is None else f"{100 * row['plus_pass_at_1']:.1f} "
                        f"({100 * row['plus_ci_low']:.1f}-{100 * row['plus_ci_high']:.1f})")
    if by_cost(rows):  # several models or a cost budget: what a problem cost at the runs' prices
        at = columns.index("tokens/problem") + 1
        columns.insert(at, COST_COLUMN)
        for row, line in zip(rows, cells, strict=True):
            line.insert(at, f"{row['mean_cost']:.3g}")
    return columns, cells


SELECTION_COLUMNS = ("graph", "problems", "public-passing but wrong", "selector changed the final", "fixed",
                     "broke", "judge abstentions", "selector model faults")


def public_but_wrong(record: dict) -> bool:
    """A final that passes every public test and fails the private ones."""
    return record.get("public_pass_rate") == 1.0 and not record.get("private_passed")


def selection_rows(records: list[dict]) -> list[dict]:
    """Per run: finals that pass every public test but fail the private ones, and, where a selector ran, how
    often it replaced the method's own program and whether that fixed or broke it (private verdicts, scored by
    the harness); the judge's abstentions under ``differential``; selections that went on without a failed
    Tester or judge call."""
    groups: dict[str, list[dict]] = {}
    for record in latest_records(records):
        if not record.get("error"):
            groups.setdefault(run_label(record), []).append(record)
    rows = []
    for label, group in groups.items():
        chosen = [r for r in group if r.get("selection")]
        changed = [r for r in chosen if r["selection"].get("changed")]
        comparisons = [c for r in chosen for c in r["selection"].get("comparisons") or []]
        rows.append({
            "graph": label, "problems": len(group),
            "public_but_wrong": sorted(r["problem_id"] for r in group if public_but_wrong(r)),
            "selected": len(chosen), "changed": len(changed),
            "fixed": sorted(r["problem_id"] for r in changed
                            if r.get("private_passed") and not r["selection"].get("own_private_passed")),
            "broke": sorted(r["problem_id"] for r in changed
                            if r["selection"].get("own_private_passed") and not r.get("private_passed")),
            "comparisons": sum(1 for c in comparisons if c.get("verdict") != "not judged"),
            "abstained": sum(1 for c in comparisons if c.get("verdict") == "abstained"),
            "faults": sorted(r["problem_id"] for r in chosen if r["selection"].get("model_error")),
        })
    return sorted(rows, key=lambda r: r["graph"])


def selection_cells(row: dict) -> list[str]:
    """A selection row as table cells (problem ids after the counts)."""
    def ids(found: list[str]) -> str:
        return f"{len(found)}" + (f" ({', '.join(found)})" if found else "")

    judged = f"{row['abstained']} of {row['comparisons']}" if row["comparisons"] else "-"
    changed = f"{row['changed']} of {row['selected']}" if row["selected"] else "-"
    return [row["graph"], str(row["problems"]), ids(row["public_but_wrong"]), changed,
            ids(row["fixed"]) if row["selected"] else "-", ids(row["broke"]) if row["selected"] else "-", judged,
            ids(row["faults"]) if row["selected"] else "-"]


def summary_cells(row: dict) -> list[str]:
    """A summary row as the strings shown in the terminal and Markdown tables."""
    budget = row["budget"] or {}
    limit, unit = budget.get("limit", "?"), budget.get("unit", "")
    unit = unit[:-1] if limit == 1 and unit.endswith("s") else unit  # "1 program", "5 rollouts"
    return [row["graph"], str(row["model"]), f"{limit} {unit}".strip(),
            str(row["problems"]),
            f"{100 * row['pass_at_1']:.1f} ({100 * row['ci_low']:.1f}-{100 * row['ci_high']:.1f})",
            pass_rate_cell(row), f"{row['mean_tokens']:,.0f}", f"{row['mean_calls']:.1f}",
            "-" if row["tokens_per_solved"] is None else f"{row['tokens_per_solved']:,.0f}",
            "-" if row["public_pass_share"] is None else f"{100 * row['public_pass_share']:.1f}%",
            str(row["errors"])]


def plain_resample(record: dict) -> bool:
    """A run of plain resampling: ``resample`` keeping its first public-passing sample (no other selector)."""
    settings = record.get("settings") or {}
    return (record.get("graph") == "resample" and settings.get("selector", "public") == "public"
            and settings.get("min_candidates", 1) == 1)


def run_namer(latest: list[dict]) -> Callable[[dict], str]:
    """How the report names a record's run: its label, followed by its model when the results hold several."""
    if len({r.get("model") for r in latest}) > 1:
        return lambda record: f"{run_label(record)} ({record.get('model')})"
    return run_label


def pairwise(latest: list[dict], graph: str, base: str, *, finals: bool = False) -> str:
    """One line: the problems ``graph`` solves that ``base`` fails and the reverse, over the problems both ran
    (runs named by ``run_namer``); with ``finals``, also those on which it returned another final program (what a
    setting changed beyond the verdicts)."""
    name = run_namer(latest)
    by_key = {(name(r), r["problem_id"]): r for r in latest}
    problems = list(dict.fromkeys(r["problem_id"] for r in latest))
    common = [p for p in problems if (base, p) in by_key and (graph, p) in by_key]
    solved = {g: {p for p in common if by_key[g, p].get("private_passed")} for g in (graph, base)}
    won = [p for p in common if p in solved[graph] - solved[base]]
    lost = [p for p in common if p in solved[base] - solved[graph]]
    line = (f"- {graph} vs {base} on the {len(common)} problems both ran: "
            f"solves {len(won)} that {base} fails ({', '.join(won) or 'none'}), "
            f"fails {len(lost)} that {base} solves ({', '.join(lost) or 'none'})")
    if not finals:
        return line

    def final(label: str, problem: str) -> str:
        return (by_key[label, problem].get("final_code") or "").strip()

    changed = [p for p in common if final(graph, p) != final(base, p)]
    return f"{line}; another final program on {len(changed)} ({', '.join(changed) or 'none'})"


SPENT = {  # what a run spent per problem, by measure: its reading and how a line shows it
    "tokens": (tokens_spent, lambda v: f"{v:,.0f} tokens/problem", lambda v: f"{v:,.0f}"),
    "cost": (lambda r: r.get("cost"), lambda v: f"{v:.3g} cost/problem", lambda v: f"{v:.3g}"),
    # a run replayed from the response cache is timed as if it had made its calls (what they took when made)
    "wall": (lambda r: r["wall_s"] + r.get("replayed_s", 0.0) if r.get("wall_s") is not None else None,
             lambda v: f"{v:,.0f} s/problem", lambda v: f"{v:,.0f} s"),
}


def against_resampling(latest: list[dict], rows: list[dict], by: str = "tokens") -> list[str]:
    """Each run against the plain-resampling run of its model that, on the problems both ran, spent the most
    tokens per problem without spending more than it: the problems one solves and the other fails, and both
    pass@1 and tokens per problem on those problems (so a run still in progress meets the baseline's same
    problems). Runs cheaper than every resampling run are left out; of two bases at equal tokens, the one whose
    records come first. ``by`` 'cost' (at the runs' prices) or 'wall' (seconds on this machine) instead of
    'tokens': against the resampling of every model (the one of each model that spent the most without spending
    more), where both runs' records have that measure."""
    runs: dict[tuple, dict[str, dict]] = {}
    name = run_namer(latest)
    for record in latest:
        runs.setdefault((run_label(record), record.get("model")), {})[record["problem_id"]] = record
    names = {key: name(next(iter(problems.values()))) for key, problems in runs.items()}
    plain = [key for key in runs if any(plain_resample(r) for r in runs[key].values())]  # ordered: ties stay put

    spent, shown, base_shown = SPENT[by]
    any_model = by != "tokens"

    def on(key: tuple, common: list[str]) -> tuple[float, float] | None:  # spent per problem, pass@1
        chosen = [runs[key][p] for p in common]
        amounts = [spent(r) for r in chosen]
        if None in amounts:
            return None
        return sum(amounts) / len(chosen), sum(bool(r.get("private_passed")) for r in chosen) / len(chosen)

    lines = []
    for key in ((row["graph"], row["model"]) for row in rows):
        if key in plain or key not in runs:
            continue
        best: dict = {}  # per base model (one for tokens: the run's own)
        for base in (b for b in plain if any_model or b[1] == key[1]):
            common = [p for p in runs[key] if p in runs[base]]
            mine, theirs = (on(key, common), on(base, common)) if common else (None, None)
            if mine is None or theirs is None:
                continue
            if theirs[0] <= mine[0] and (base[1] not in best or theirs[0] > best[base[1]][3]):
                best[base[1]] = (base, *mine, *theirs)
        for base, amount, passed, base_amount, base_passed in best.values():
            lines.append(f"{pairwise(latest, names[key], names[base])}; on them pass@1 {100 * passed:.1f} at "
                         f"{shown(amount)} against {100 * base_passed:.1f} at {base_shown(base_amount)}"
                         + (OTHER_MACHINES if by == "wall" and len(machines(runs, key, base)) > 1 else ""))
    return lines


OTHER_MACHINES = " (measured on different machines: these wall times do not compare)"


def machines(runs: dict[tuple, dict[str, dict]], *keys: tuple) -> set[str]:
    """The machines the runs' records name (records written before they named one left out)."""
    return {r["machine"] for key in keys for r in runs[key].values() if r.get("machine")}


def resampling_comparisons(latest: list[dict], rows: list[dict]) -> dict[str, list[str]]:
    """Each search against plain resampling at no more tokens (its own model's), and, when the runs are worth
    comparing by cost (``by_cost``), at no more cost and no more wall time (every model's); by the measure's name."""
    measures = {"tokens": "tokens", **({"cost": "cost", "wall time": "wall"} if by_cost(rows) else {})}
    return {name: against_resampling(latest, rows, by=by) for name, by in measures.items()}


def by_cost(rows: list[dict]) -> bool:
    """True when the runs are worth comparing by cost: every one priced, and some on several models or under a
    cost budget (for one model alone, cost is its tokens at one price)."""
    return all(r["mean_cost"] is not None for r in rows) and \
        any(len(r["models"]) > 1 or r.get("cost_budget") for r in rows)


def _table(header: list[str] | tuple[str, ...], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def markdown(records: list[dict]) -> str:
    """The summary table, then one row per problem (solved or not, calls, tokens per graph), then, for each
    graph against the first one and each ablation against its graph's defaults, the problems only one of them
    solved: small samples are compared pairwise."""
    latest = latest_records(records)
    rows = summarize(latest)
    name = run_namer(latest)
    graphs = list(dict.fromkeys(name(r) for r in latest))
    problems = list(dict.fromkeys(r["problem_id"] for r in latest))
    by_key = {(name(r), r["problem_id"]): r for r in latest}

    def cell(record: dict | None) -> str:
        if record is None:
            return "not run"
        verdict = "error" if record.get("error") else "pass" if record.get("private_passed") else "fail"
        tokens = tokens_spent(record)
        return f"{verdict} ({record.get('llm_calls', 0)} calls, {tokens:,} tok)"

    note = pass_rate_note(rows)
    parts = ["## Summary", _table(*summary_table(rows)), *([note] if note else []),
             "## Per problem (private tests)",
             _table(["problem", *graphs], [[p, *(cell(by_key.get((g, p))) for g in graphs)] for p in problems])]

    parts += ["## Public-passing finals and selectors", _table(SELECTION_COLUMNS,
                                                              [selection_cells(r) for r in selection_rows(latest)])]
    graph_of = {name(r): name({**r, "settings": {}}) for r in latest}  # a run's name at its graph's defaults

    def against(g: str, base: str) -> str:  # an ablation also says where its final program changed
        return pairwise(latest, g, base, finals=graph_of[g] == base != g)

    if len(graphs) > 1:
        parts += [f"## Against {graphs[0]}, problem by problem", "\n".join(against(g, graphs[0]) for g in graphs[1:])]
    for measure, lines in resampling_comparisons(latest, rows).items():  # every search against plain resampling
        if lines:
            parts += [f"## Against plain resampling at no more {measure}", "\n".join(lines)]
    ablations = [g for g in graphs if graph_of[g] != g and graph_of[g] in graphs and graph_of[g] != graphs[0]]
    if ablations:  # a run with other settings against the same graph at its defaults
        parts += ["## Against the same graph at its defaults", "\n".join(against(g, graph_of[g]) for g in ablations)]
    return "\n\n".join(parts) + "\n"


def report(out_dir: str | Path) -> tuple[list[dict], Path | None]:
    """Summarize a results folder; write its plot and a Markdown report next to the results."""
    records = read_results(out_dir)
    rows = summarize(records)
    if not rows:
        return rows, None
    (Path(out_dir) / MARKDOWN).write_text(markdown(records), encoding="utf-8")
    if by_cost(rows):
        plot(rows, Path(out_dir) / COST_PLOT, x="mean_cost")
    return rows, plot(rows, Path(out_dir) / PLOT)
