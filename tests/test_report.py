"""The report's plot (one legend entry per run, panels per method, readable ticks, fitted ranges) and its marking of
pass rates counted per check block."""

from __future__ import annotations

import json

import pytest

from codeforest.report import (
    WHOLE_CHECK_MARK,
    WHOLE_CHECK_NOTE,
    curves,
    figure,
    markdown,
    panels,
    summarize,
    summary_table,
    tokens_text,
)


def run(graph: str, tokens: int, solved: int, settings: dict | None = None, *, problems: int = 5,
        private_tests: int | None = 4) -> list[dict]:
    """One run's records: ``solved`` of ``problems`` pass, the others pass half of their private tests."""
    return [{"graph": graph, "settings": settings or {}, "model": "m", "problem_id": f"P/{i}", "error": None,
             "private_passed": i < solved, "private_pass_rate": 1.0 if i < solved else 0.5,
             "private_tests": private_tests, "prompt_tokens": tokens, "completion_tokens": 0}
            for i in range(problems)]


def legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def drawn(rows: list[dict]):
    fig = figure(rows)
    fig.canvas.draw()  # tick labels exist once drawn
    return fig, [ax for ax in fig.axes if ax.get_visible()]


def test_few_runs_share_one_panel_with_one_legend_entry_each_and_plain_log_ticks():
    records = (run("direct", 300, 12, problems=20) + run("tree", 30_000, 16, problems=20)
               + run("resample", 2_000, 14, {"token_budget": 2000}, problems=20)
               + run("resample", 6_000, 16, {"token_budget": 8000}, problems=20)
               + run("resample", 900, 13, {"token_budget": 1000, "resample_n": 3}, problems=20)
               + run("resample", 900, 13, {"token_budget": 9000, "resample_n": 3}, problems=20))
    rows = summarize(records)
    fig, axes = drawn(rows)
    assert len(axes) == 1
    ax = axes[0]
    assert legend_texts(ax) == ["direct", "resample resample_n=3, token budgets 1k, 9k",
                                "resample, token budgets 2k, 8k", "tree"]
    assert ax.get_xscale() == "log"
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert {"1k", "10k"} <= set(ticks) and not any("^" in t for t in ticks)  # 10k, not 10^4
    low, high = ax.get_xlim()
    assert low < 300 and 30_000 < high < 60_000  # fitted: the points spread over the whole axis
    bottom, top = ax.get_ylim()
    assert 0 <= bottom <= 100 * min(r["ci_low"] for r in rows) and top >= 100 * max(r["ci_high"] for r in rows)
    assert bottom > 0  # fitted to the intervals, not 0-100 whatever the data
    # resample_n=3's two budgets never stopped it: one point with an error bar, not a zero-width band
    assert len(ax.containers) == 3


def test_many_runs_get_a_panel_per_method_and_one_for_the_methods_run_once():
    records = (run("direct", 300, 2) + run("gvr", 50_000, 3) + run("tree", 10_000, 3)
               + run("tree", 20_000, 4, {"selector": "agreement"}) + run("resample", 2_000, 3)
               + run("resample", 1_500, 3, {"resample_n": 8}) + run("resample", 3_000, 3, {"selector": "codet"})
               + run("resample", 3_500, 3, {"selector": "differential"}))
    rows = summarize(records)
    assert [[name for name, _ in keys] for keys in panels(curves(rows))] == [
        ["resample", "resample resample_n=8", "resample selector=codet", "resample selector=differential"],
        ["tree", "tree selector=agreement"], ["direct", "gvr"]]
    fig, axes = drawn(rows)
    assert [ax.get_title(loc="left") for ax in axes] == ["resample", "tree", "direct, gvr"]
    assert legend_texts(axes[0]) == ["defaults", "resample_n=8", "selector=codet", "selector=differential",
                                     "other runs (in their own panels)"]
    assert legend_texts(axes[2]) == ["direct", "gvr", "other runs (in their own panels)"]
    assert len({ax.get_xlim() for ax in axes}) == 1 and len({ax.get_ylim() for ax in axes}) == 1  # comparable


def test_tokens_read_as_plain_numbers():
    assert [tokens_text(v) for v in (500, 1000, 1500, 20_000, 130_654, 2_000_000)] == [
        "500", "1k", "1.5k", "20k", "131k", "2M"]


def test_a_pass_rate_counted_per_check_block_is_marked_and_explained(tmp_path):
    old = run("bester", 1_000, 3, private_tests=1)  # the check run whole: pass rate 0 or 1
    for record in old:
        record["private_pass_rate"] = float(record["private_passed"])
    mixed = run("tree", 2_000, 3)
    for record in mixed[:2]:
        record["private_tests"] = 1
    records = old + mixed + run("bester", 1_000, 3, {"token_budget": 32000})
    rows = {r["graph"]: r for r in summarize(records)}
    assert rows["bester"]["mean_pass_rate"] == pytest.approx(0.6)  # the numbers themselves stay as measured
    assert rows["bester token_budget=32000"]["mean_pass_rate"] == pytest.approx(0.8)
    columns, cells = summary_table(list(rows.values()))
    rate = {line[0]: line[columns.index("mean pass rate")] for line in cells}
    assert rate == {"bester": f"60.0{WHOLE_CHECK_MARK}", "bester token_budget=32000": "80.0",
                    "tree": f"80.0{WHOLE_CHECK_MARK} (2 of 5)"}
    summary = markdown(records).split("## Per problem")[0]
    assert summary.rstrip().endswith(WHOLE_CHECK_NOTE)
    assert "counted per check block, not per assert" in WHOLE_CHECK_NOTE
    assert WHOLE_CHECK_MARK not in markdown(run("bester", 1_000, 3))  # newer records alone: nothing marked
    from codeforest.report_html import html_report

    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    page = html_report(tmp_path).read_text()
    assert "Mean pass rate counted per check block, not per assert" in page
