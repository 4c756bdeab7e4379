"""``codeforest bench-concurrency``: does a search scale with the endpoint, and what does codeforest cost?

Every model call goes to a scripted OpenAI-compatible endpoint on 127.0.0.1 that answers after a fixed
delay with as many calls in flight as are sent, so the only limits left are codeforest's own. For each
graph, the problems run once one at a time (the finish time of each is kept), then N at a time for each
asked concurrency N; the speed-up at N is the one-at-a-time time of those same N problems over the time
at N. Inside one search, graphs with their own concurrency setting (BESTER's repairs, RethinkMCTS's
children) run one problem at a time with that setting at 1 and at N. "Outside" is the share of the runs'
time spent neither in model calls nor in sandbox runs: codeforest's overhead.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codeforest.bench import Bench, read_results
from codeforest.context import Context
from codeforest.problems import Task
from codeforest.registry import context_for
from codeforest.scripted_endpoint import ScriptedEndpoint, any_role_reply

INSIDE = {"bester": "bester_concurrency", "rethink_mcts": "rethink_concurrency"}  # in-search parallel branches
RESULT = "concurrency.json"


def outside_share(records: list[dict]) -> float:
    """The share of the runs' wall time outside model calls and sandbox runs (0 when nothing ran)."""
    wall = sum(r["wall_s"] for r in records)
    return sum(r["outside_s"] for r in records) / wall if wall else 0.0


def finish_times(graph: str, tasks: list[Task], out: Path, context: Context, dataset: str,
                 concurrency: int = 1) -> tuple[list[float], list[dict]]:
    """Run ``tasks`` with ``graph``; the seconds from the start at which each finished, and the records."""
    started, finished = time.perf_counter(), []

    def on_progress(_progress, record) -> None:
        if record is not None:
            finished.append(time.perf_counter() - started)

    Bench([graph], tasks, out, context=context, dataset=dataset, concurrency=concurrency).run(on_progress)
    records = read_results(out)
    errors = [r["error"] for r in records if r["error"]]
    if errors:
        raise RuntimeError(f"{graph} failed against the scripted endpoint: {errors[0]}")
    return finished, records


def row(graph: str, mode: str, n: int, problems: int, serial_s: float, wall_s: float, records: list[dict],
        delay: float) -> dict:
    """One line of the table: the speed-up over one at a time and the share outside model and sandbox."""
    return {"graph": graph, "mode": mode, "n": n, "problems": problems, "delay_s": delay,
            "calls": sum(r["llm_calls"] for r in records), "serial_s": round(serial_s, 3), "wall_s": round(wall_s, 3),
            "speedup": round(serial_s / wall_s, 2), "efficiency": round(serial_s / wall_s / n, 2),
            "outside_share": round(outside_share(records), 4)}


def bench_concurrency(graphs: list[str], tasks: list[Task], out: Path, *, context: Context, dataset: str,
                      concurrencies: list[int], delay: float, inside: list[int] | None = None,
                      on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """The rows for every graph: across problems at each concurrency, and inside one search (``inside``)."""
    rows = []
    out.mkdir(parents=True, exist_ok=True)
    with ScriptedEndpoint([], delay=delay, respond=any_role_reply) as endpoint, \
            tempfile.TemporaryDirectory(prefix="codeforest-concurrency-") as scratch:
        runs = Path(scratch)  # fresh folders: a bench resuming earlier records would time nothing
        base = context.model_copy(update={"base_url": endpoint.url, "model": "scripted", "cache_path": "",
                                          "token_budget": 0})
        for graph in graphs:
            ctx = context_for(graph, base)
            largest = max(concurrencies)
            finish_times(graph, tasks[:1], runs / f"{graph}-warmup", ctx, dataset)  # imports, first client, compile
            serial, records = finish_times(graph, tasks[:largest], runs / f"{graph}-serial", ctx, dataset)
            rows.append(row(graph, "problems", 1, largest, serial[-1], serial[-1], records, delay))
            if on_row:
                on_row(rows[-1])
            for n in (c for c in concurrencies if c > 1):
                wall, records = finish_times(graph, tasks[:n], runs / f"{graph}-x{n}", ctx, dataset, concurrency=n)
                rows.append(row(graph, "problems", n, n, serial[n - 1], wall[-1], records, delay))
                if on_row:
                    on_row(rows[-1])
            if graph in INSIDE and inside:
                field = INSIDE[graph]
                one, _ = finish_times(graph, tasks[:1], runs / f"{graph}-inside1", ctx.model_copy(update={field: 1}),
                                      dataset)
                for n in (c for c in inside if c > 1):
                    wall, records = finish_times(graph, tasks[:1], runs / f"{graph}-inside{n}",
                                                 ctx.model_copy(update={field: n}), dataset)
                    rows.append(row(graph, f"inside ({field})", n, 1, one[-1], wall[-1], records, delay))
                    if on_row:
                        on_row(rows[-1])
            (out / RESULT).write_text(json.dumps(rows, indent=1), encoding="utf-8")  # each graph as it finishes
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    lines = ["| graph | parallel | N | problems | delay s | calls | one at a time s | at N s | speed-up | outside |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['graph']} | {r['mode']} | {r['n']} | {r['problems']} | {r['delay_s']} | {r['calls']} | "
                     f"{r['serial_s']} | {r['wall_s']} | {r['speedup']}x | {r['outside_share']:.1%} |")
    return "\n".join(lines) + "\n"
