"""``codeforest bench`` (graphs x problems, resumable) and ``codeforest report`` (its tables and plots)."""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from codeforest.cli.common import (
    SETTINGS_EPILOG,
    add_cache_arg,
    add_context_args,
    context_from_args,
    dataset_label,
    err,
    first_few,
    heartbeat,
    iso_date,
    note_single_candidate,
    positive_int,
    prepare_models,
)
from codeforest.problems import DatasetError
from codeforest.registry import check_run_roles, graph_names

if TYPE_CHECKING:
    from codeforest.context import Context

EXIT_ERRORS = 3  # bench: some runs ended in an error (a model fault or a raise): the measurement is incomplete


def register(sub) -> None:
    """Add the bench and report commands to the ``codeforest`` subparsers."""
    bench = sub.add_parser("bench", help="run graphs on a dataset at their budgets; resumable", epilog=SETTINGS_EPILOG)
    bench.add_argument("--graph", action="append", choices=graph_names(),
                       help="a graph to run (repeat for several); required but with --rescore-plus")
    bench.add_argument("--dataset", help="a dataset name or a .jsonl path; required but with --rescore-plus")
    bench.add_argument("--rescore-plus", action="store_true",
                       help="no model call: score the final programs of the HumanEval and MBPP runs in --out on "
                            "EvalPlus's base and plus tests (humaneval_plus, mbpp_plus), written to <out>/plus.jsonl "
                            "and shown by report beside pass@1")
    pick = bench.add_mutually_exclusive_group()
    pick.add_argument("--problems", help="comma-separated problem ids")
    pick.add_argument("--limit", type=positive_int, help="the first N problems")
    pick.add_argument("--sample", type=positive_int, help="N problems drawn at random (with --seed)")
    bench.add_argument("--seed", type=int, default=0, help="the draw of --sample (default 0)")
    bench.add_argument("--since", type=iso_date, metavar="YYYY-MM-DD",
                       help="only problems whose contest date is on or after this day (LiveCodeBench: contamination "
                            "control against a model's training cut-off); applied before --sample/--limit")
    bench.add_argument("--until", type=iso_date, metavar="YYYY-MM-DD", help="only problems dated up to this day")
    bench.add_argument("--concurrency", type=positive_int, default=1, help="problems solved at once")
    bench.add_argument("--out", help="results folder (default: runs/<dataset>-<model>)")
    add_cache_arg(bench, "<out>/responses.sqlite")
    bench.add_argument("--retry-errors", action="store_true", help="rerun problems whose graph raised")
    bench.add_argument("--server", metavar="URL",
                       help="run the graphs on a LangGraph Server (e.g. http://127.0.0.1:2024): one thread per run, "
                            "only the public problem is sent; private tests are scored here")
    budget = bench.add_mutually_exclusive_group()
    budget.add_argument("--token-budget", metavar="N[,N...]",
                        help="run every graph at each token budget (e.g. 2000,8000,32k), largest first; the budgets "
                             "share one response cache (<out>/responses.sqlite unless --cache PATH or "
                             "CODEFOREST_CACHE_PATH names another; none on a --server run), so the smaller ones "
                             "replay the larger runs' calls")
    budget.add_argument("--cost-budget", metavar="X[,X...]",
                        help="run every graph at each cost budget, in the price table's unit (--price, --prices; "
                             "e.g. 0.002,0.01), largest first, sharing one response cache as --token-budget does")
    budget.add_argument("--tokens-of", metavar="GRAPH", choices=graph_names(),
                        help="run at the mean tokens per problem GRAPH spent at its defaults in <out>: plain "
                             "resampling at a search's tokens (CODEFOREST_RESAMPLE_N=1000: as many samples as fit)")
    add_context_args(bench)
    bench.set_defaults(func=cmd_bench)

    rep = sub.add_parser("report", help="summarize a bench results folder and plot pass@1 against tokens")
    rep.add_argument("out", help="a folder written by codeforest bench")
    rep.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    rep.add_argument("--html", action="store_true", help="also write DIR/report.html: tables, curves and every "
                                                          "search tree, one self-contained page")
    rep.set_defaults(func=cmd_report)


def cmd_bench(args: argparse.Namespace) -> int:
    """Run graphs x problems, appending one record per finished pair; then print the report."""
    from codeforest.bench import (
        Bench,
        mean_tokens_of,
        parse_budgets,
        parse_cost_budgets,
        read_results,
        select_tasks,
        write_samples,
    )
    from codeforest.context import shown_model
    from codeforest.graphs.kit import check_prices
    from codeforest.loading import load_dataset, released_between

    if args.rescore_plus:
        return rescore_plus(args)
    if not args.graph or not args.dataset:
        raise ValueError("bench needs --graph and --dataset (or --rescore-plus with --out)")
    context = context_from_args(args)
    check_run_roles(args.graph, context)  # before a model download or a dataset fetch
    note_single_candidate(context)
    dataset = dataset_label(args.dataset)
    out = Path(args.out or f"runs/{dataset}-{model_label(context.model)}")
    if out.exists() and not out.is_dir():
        raise DatasetError(f"{out} is a file: --out names the results folder")
    tasks = released_between(load_dataset(args.dataset, args.data_dir), args.since, args.until)
    problems = args.problems.split(",") if args.problems else None
    tasks = select_tasks(tasks, problems=problems, limit=args.limit, sample=args.sample, seed=args.seed)
    if args.tokens_of:  # --tokens-of and --token-budget exclude each other
        budgets = [mean_tokens_of(read_results(out), args.tokens_of, model=shown_model(context.model),
                                  dataset=dataset)]
        err.print(f"{args.tokens_of} spent {budgets[0]:,} tokens a problem in {out}: the token budget")
    elif args.cost_budget:
        budgets = parse_cost_budgets(args.cost_budget)
    else:
        budgets = parse_budgets(args.token_budget) if args.token_budget else [context.token_budget]
    if args.cache is not None:
        context.cache_path = args.cache or str(out / "responses.sqlite")
    elif len(budgets) > 1 and not context.cache_path and not args.server:
        context.cache_path = str(out / "responses.sqlite")  # the smaller budgets replay the larger runs' calls
        err.print(f"A budget sweep shares the response cache {context.cache_path} (--cache PATH for another)")
    # under a cost budget (--cost-budget or the environment's), every model of the run priced before anything starts
    check_prices(context.model_copy(update={"cost_budget": budgets[0]}) if args.cost_budget else context)
    runner = None
    if args.server:  # the server runs the model: nothing to start or download here
        from codeforest.server_runs import ServerSolver

        runner = ServerSolver(args.server, out)
    else:  # a download or a missing .gguf before the first problem
        prepare_models(context, args.graph, slots=args.concurrency)
    errored = []
    for budget in budgets:
        if args.cost_budget:
            context.cost_budget = budget
        else:
            context.token_budget = budget
        bench = Bench(args.graph, tasks, out, context=context, dataset=dataset, concurrency=args.concurrency,
                      retry_errors=args.retry_errors, runner=runner)
        _run_bench(bench, context, dataset, budget)
        errored += bench.errored()
    write_samples(out)
    cmd_report(argparse.Namespace(out=str(out), json=False))
    if errored:  # the measurement is incomplete: say so, and in the exit status, for scripts
        names = first_few([f"{graph} {problem}" for graph, problem in errored])
        err.print(f"[red]{len(errored)} run(s) ended in an error[/red] ({names}; see results.jsonl): "
                  "--retry-errors runs them again")
        return EXIT_ERRORS
    return 0


def model_label(model: str) -> str:
    """How a model is named in the default results folder: a .gguf file's stem, else the name with its path and
    tag separators made dashes (``qwen2.5-coder:7b`` -> ``qwen2.5-coder-7b``)."""
    if model.endswith(".gguf"):
        return Path(model).stem
    return model.strip("/").replace("/", "-").replace(":", "-")


def _run_bench(bench, context: Context, dataset: str, budget: float) -> None:
    """One bench pass with a progress bar and one log line per finished problem."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    limit = f", cost budget {budget:g}" if context.cost_budget else f", token budget {budget:,}" if budget else ""
    err.print(f"{len(bench.graphs)} graph(s) x {len(bench.tasks)} problems of {dataset}, model {context.model}"
              f"{limit}; results in {bench.out}")
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[status]}")]
    with Progress(*columns, console=err, transient=False) as bar:
        task_id = bar.add_task("bench", total=None, status="")

        shown, showing = {"status": ""}, threading.Lock()  # the heartbeat thread shows too

        def show(status: str | None = None) -> None:
            with showing:
                if status is not None:
                    shown["status"] = status
                running = bench.in_flight()
                live = f"  in flight {len(running)}" if running else ""
                if running and running[0]["calls"] is not None:
                    live += f": {sum(r['calls'] for r in running)} calls"
                bar.update(task_id, status=shown["status"] + live)

        def on_progress(progress, record) -> None:
            status = (f"solved {progress.solved}  failed {progress.failed}  errors {progress.errors}  "
                      f"tokens {progress.tokens:,}")
            if progress.skipped:
                status += f"  (skipped {progress.skipped} already done)"
            bar.update(task_id, total=progress.total, completed=progress.done)
            show(status)
            if record is None:
                return
            if record["error"]:
                err.print(f"[red]{record['graph']} {record['problem_id']}: {escape(record['error'])}[/red]")
            else:  # one line per finished problem: the log of a run in the background
                err.print(f"{finished_line(record)}  [{progress.done}/{progress.total}]")

        with heartbeat(bench, show, live=err.is_terminal):
            bench.run(on_progress)


def finished_line(record: dict) -> str:
    """A finished problem in the bench log: verdict, stop reason, calls (a trained PRM's apart), tokens, seconds."""
    from codeforest.cost import tokens_spent

    verdict = "solved" if record["private_passed"] else "failed"
    prm = f" (+{record['prm_calls']} PRM)" if record.get("prm_calls") else ""
    return (f"{record['graph']} {record['problem_id']}: {verdict} ({record['stop_reason']}), {record['llm_calls']} "
            f"calls{prm}, {tokens_spent(record):,} tokens, {record['wall_s']:.0f} s")


def rescore_plus(args: argparse.Namespace) -> int:
    """Score a results folder's HumanEval and MBPP finals on EvalPlus's tests, with no model call."""
    from codeforest.bench import PLUS_RESCORED, read_results
    from codeforest.datasets import write_atomically
    from codeforest.evalplus import rescore_plus as rescore

    if not args.out or not Path(args.out).is_dir():
        raise DatasetError("--rescore-plus needs --out naming a folder written by codeforest bench")
    records = read_results(args.out)
    rows = rescore(records, args.data_dir, backend=args.sandbox)
    if not rows:
        raise DatasetError(f"{args.out} holds no finished HumanEval or MBPP record that EvalPlus covers")
    path = Path(args.out) / PLUS_RESCORED
    write_atomically(path, "".join(json.dumps(row) + "\n" for row in rows).encode())
    fooled = sum(1 for row in rows if row["base_passed"] and not row["plus_passed"])
    err.print(f"{len(rows)} distinct final programs scored on EvalPlus's tests ({path}): {fooled} pass the base "
              "tests and fail the plus tests")
    return cmd_report(argparse.Namespace(out=args.out, json=False, html=False))


def cmd_report(args: argparse.Namespace) -> int:
    """Print pass@1 (95% interval), pass rate and cost per graph; write the plot and report.md."""
    from codeforest.report import MARKDOWN, report, summary_table

    if not Path(args.out).is_dir():
        raise DatasetError(f"{args.out} {'is not a folder' if Path(args.out).exists() else 'does not exist'}: give "
                           "the results folder of a codeforest bench (its --out)")
    rows, plot_path = report(args.out)
    if not rows:
        raise DatasetError(f"No results in {args.out}")
    if getattr(args, "html", False):
        from codeforest.report_html import html_report

        err.print(f"wrote {html_report(args.out)}")
    if args.json:
        print(json.dumps({"rows": rows, "plot": str(plot_path)}))
        return 0
    from rich.table import Table

    table = Table(title=f"Results in {args.out}")
    columns, cells = summary_table(rows)
    for column in columns:
        table.add_column(column, justify="left" if column in ("graph", "model", "budget") else "right")
    for line in cells:
        table.add_row(*line)
    out = Console()
    if not out.is_terminal:
        out.width = 160  # a file or a pipe: do not squeeze the table into 80 columns
    out.print(table)
    err.print(f"plot: {plot_path}; Markdown report: {plot_path.parent / MARKDOWN}")
    return 0
