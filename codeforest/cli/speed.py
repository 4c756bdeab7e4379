"""The speed measurements: ``bench-sandbox``, ``bench-startup``, ``bench-concurrency`` and ``bench-model``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from codeforest.cli.common import dataset_label, err, positive_int, positive_ints
from codeforest.loading import load_dataset
from codeforest.problems import DatasetError
from codeforest.registry import graph_names


def register(sub) -> None:
    """Add the bench-sandbox, bench-concurrency and bench-model commands to the ``codeforest`` subparsers."""
    bench_sb = sub.add_parser("bench-sandbox", help="time the sandbox against a bare interpreter")
    bench_sb.add_argument("--repeat", type=positive_int, default=20, help="runs per runner; the median counts "
                                                                          "(default 20)")
    bench_sb.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    bench_sb.set_defaults(func=cmd_bench_sandbox)

    startup = sub.add_parser("bench-startup", help="time --help of every command and a bad flag, warm and cold")
    startup.add_argument("--repeat", type=positive_int, default=5, help="runs per command; the median counts "
                                                                        "(default 5)")
    startup.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    startup.set_defaults(func=cmd_bench_startup)

    scale = sub.add_parser("bench-concurrency", help="how graphs scale with a fast endpoint: a scripted one on "
                                                     "127.0.0.1 answers every call after a fixed delay")
    scale.add_argument("--graph", action="append", choices=graph_names(),
                       help="a graph to run (repeat; default: direct, codetree, bester)")
    scale.add_argument("--dataset", default="humaneval", help="a dataset name or a .jsonl path (default humaneval)")
    scale.add_argument("--concurrency", type=positive_ints, default=[1, 8, 32], metavar="N[,N...]",
                       help="problems at once; N problems run at N and one at a time (default 1,8,32)")
    scale.add_argument("--inside", type=positive_ints, default=[1, 5], metavar="N[,N...]",
                       help="in-search concurrency of graphs that have one (BESTER, RethinkMCTS) (default 1,5)")
    scale.add_argument("--delay", type=float, default=0.5, help="seconds before each scripted answer (default 0.5)")
    scale.add_argument("--out", default="runs/concurrency", help="folder for concurrency.json and concurrency.md")
    scale.add_argument("--sandbox", choices=["local", "e2b"])
    scale.add_argument("--data-dir", help="benchmark folder (default: $CODEFOREST_DATA or ../shared/data)")
    scale.set_defaults(func=cmd_bench_concurrency)

    model_b = sub.add_parser("bench-model", help="the embedded model server under different settings, replaying "
                                                 "recorded role calls: speed, peak memory, identical replies")
    model_b.add_argument("--model", default="local", help="local (1.5B, default), small (0.5B) or a .gguf path")
    model_b.add_argument("--calls", help="recorded calls (JSONL; default: the packaged set)")
    model_b.add_argument("--setting", action="append", metavar="NAME",
                         help="a setting to compare with the baseline (repeat; default: all)")
    model_b.add_argument("--slots", type=positive_int, default=1,
                         help="calls at a time, on a server with as many slots (as bench --concurrency N uses it; "
                              "default 1)")
    model_b.add_argument("--out", default="runs/bench-model", help="folder for bench-model.json and bench-model.md")
    model_b.add_argument("--record", action="store_true",
                         help="record calls instead: --graph on --dataset's --problems, written to --calls "
                              "(required: the packaged set is not overwritten)")
    model_b.add_argument("--graph", action="append", choices=graph_names(), help="with --record (repeat)")
    model_b.add_argument("--dataset", default="humaneval", help="with --record")
    model_b.add_argument("--problems", help="with --record: comma-separated problem ids")
    model_b.add_argument("--per-node", type=positive_int, default=2, help="with --record: calls kept per graph node")
    model_b.add_argument("--data-dir", help="benchmark folder")
    model_b.set_defaults(func=cmd_bench_model)


def cmd_bench_sandbox(args: argparse.Namespace) -> int:
    """Print the median time of a 5-test program per runner and its ratio to a bare interpreter."""
    from codeforest.sandbox_bench import bench_sandbox

    report = bench_sandbox(args.repeat)
    return _show(report, args.json, f"A {report['tests']}-test program, median of {report['repeat']} runs:",
                 lambda row: f"{row['runner']:<28} {row['median_ms']:8.1f} ms   {row['ratio']:.2f}x")


def cmd_bench_startup(args: argparse.Namespace) -> int:
    """Print the median seconds of each command's --help and of a bad flag, warm and cold."""
    from codeforest.startup_bench import bench_startup

    report = bench_startup(args.repeat)
    return _show(report, args.json,
                 f"Median of {report['repeat']} runs (warm: bytecode cached; cold: none, as a first run):",
                 lambda row: f"{row['command']:<42} warm {row['warm_s']:.2f} s   cold {row['cold_s']:.2f} s")


def _show(report: dict, as_json: bool, headline: str, line) -> int:
    """Print a timing report: as JSON, or its headline and one indented line per row."""
    if as_json:
        print(json.dumps(report))
        return 0
    out = Console(highlight=False)
    out.print(headline)
    for row in report["rows"]:
        out.print("  " + line(row))
    return 0


def cmd_bench_concurrency(args: argparse.Namespace) -> int:
    """Time each graph one problem at a time and N at a time against the scripted endpoint; print the table."""
    from codeforest.concurrency_bench import bench_concurrency, markdown
    from codeforest.context import Context

    graphs = args.graph or ["direct", "codetree", "bester"]
    tasks = load_dataset(args.dataset, args.data_dir)
    if len(tasks) < max(args.concurrency):
        raise DatasetError(f"{args.dataset} has {len(tasks)} problems; --concurrency {max(args.concurrency)} needs "
                           "as many")
    context = Context(sandbox=args.sandbox) if args.sandbox else Context()
    out = Path(args.out)
    err.print(f"{', '.join(graphs)} on {args.dataset}, a scripted endpoint answering after {args.delay} s; "
              f"concurrency {args.concurrency}, inside one search {args.inside}")

    def on_row(r: dict) -> None:
        err.print(f"{r['graph']} {r['mode']} N={r['n']}: {r['wall_s']} s, {r['speedup']}x, "
                  f"{r['calls']} calls, outside model and sandbox {r['outside_share']:.1%}")

    dataset = dataset_label(args.dataset)
    rows = bench_concurrency(graphs, tasks, out, context=context, dataset=dataset, concurrencies=args.concurrency,
                             delay=args.delay, inside=args.inside, on_row=on_row)
    table = markdown(rows)
    (out / "concurrency.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


def cmd_bench_model(args: argparse.Namespace) -> int:
    """Record role calls (--record), or replay them under each server setting and print the table."""
    from codeforest.bench import select_tasks
    from codeforest.context import Context
    from codeforest.model_bench import PACKAGED_CALLS, SETTINGS, bench_model, markdown, record_calls
    from codeforest.tools.models import ModelError, resolve_gguf

    if args.record and not (args.graph and args.problems and args.calls):
        raise ValueError("--record needs --graph, --problems and --calls FILE")
    gguf = resolve_gguf(args.model, progress=err.print)
    if gguf is None:
        raise ModelError("bench-model measures the embedded server: --model local, small or a .gguf path")
    calls = Path(args.calls) if args.calls else PACKAGED_CALLS
    if not args.record and not calls.is_file():
        raise DatasetError(f"No recorded calls {calls}: record them with --record --calls {calls}")
    if args.record:
        tasks = select_tasks(load_dataset(args.dataset, args.data_dir), problems=args.problems.split(","))
        recorded = record_calls(args.graph, [t.problem for t in tasks], Context(model=args.model), args.per_node,
                                on_problem=lambda g, p: err.print(f"recorded {g} on {p}"))
        calls.write_text("".join(json.dumps(c) + "\n" for c in recorded), encoding="utf-8")
        err.print(f"{len(recorded)} calls in {calls}")
        return 0
    settings = args.setting or list(SETTINGS)
    err.print(f"replaying {calls} with {gguf.name}, {args.slots} at a time: the baseline twice, then "
              f"{', '.join(settings)}")

    def on_setting(line: dict) -> None:
        err.print(f"{line['setting']}: {line['wall_s']} s, decode {line['decode_tps']} tok/s, "
                  f"peak {line['peak_rss_mb']} MB, {len(line['differ'])} replies differ")

    report = bench_model(gguf, calls, settings, on_setting, slots=args.slots)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench-model.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    table = markdown(report)
    (out / "bench-model.md").write_text(table, encoding="utf-8")
    print(table)
    return 0
