"""``codeforest collect-prm``: CodePRM training data, thought trees labelled by their codes' pass rates."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from codeforest.cli.common import (
    SETTINGS_EPILOG,
    add_cache_arg,
    add_context_args,
    context_from_args,
    dataset_label,
    err,
    first_few,
    heartbeat,
    positive_int,
)
from codeforest.registry import context_for

EXIT_INCOMPLETE = 3  # some problems were not collected (a model fault or a raise): a rerun collects them


def register(sub) -> None:
    """Add the collect-prm command to the ``codeforest`` subparsers."""
    prm = sub.add_parser("collect-prm", help="CodePRM training data: thought trees labelled by pass rates; resumable",
                         epilog=SETTINGS_EPILOG + " (here GVR runs without refinement and without a selector)")
    prm.add_argument("--dataset", action="append", default=[], metavar="DATASET",
                     help="a dataset name or .jsonl path (repeatable; problems are interleaved)")
    pick = prm.add_mutually_exclusive_group()
    pick.add_argument("--problems", help="comma-separated problem ids (with one --dataset)")
    pick.add_argument("--limit", type=positive_int, help="the first N problems of each dataset")
    pick.add_argument("--sample", type=positive_int, help="N problems of each dataset drawn at random (--seed)")
    prm.add_argument("--seed", type=int, default=0, help="the seed of --sample's draw (default 0)")
    prm.add_argument("--out", required=True, help="the data file (JSONL) to write and resume")
    prm.add_argument("--rollouts", type=positive_int,
                     help="rollouts per problem (default: gvr_rollouts, 16 unless CODEFOREST_GVR_ROLLOUTS says)")
    prm.add_argument("--label", choices=["private", "mean"], default="private",
                     help="a code's score: its private pass rate (the paper) or the mean of public and private "
                          "(the released code)")
    prm.add_argument("--concurrency", type=positive_int, default=1,
                     help="problems searched at once (the embedded model serves as many at a time)")
    prm.add_argument("--stats", action="store_true", help="only print the label distribution of --out")
    add_cache_arg(prm, "<out>.responses.sqlite")
    add_context_args(prm, selector=False)  # every code of the tree is labelled, none is chosen
    prm.set_defaults(func=cmd_collect_prm)


def cmd_collect_prm(args: argparse.Namespace) -> int:
    """Search each problem's thoughts, label every thought by its codes' pass rates, append the samples."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from codeforest.bench import in_flight_line, select_tasks
    from codeforest.kb import interleave
    from codeforest.loading import load_dataset
    from codeforest.prm_data import UNLABELABLE, collect, label_distribution
    from codeforest.workers import InFlight

    unwritten: list[str] = []
    if not args.stats:
        if not args.dataset:
            raise ValueError("give --dataset DATASET (repeatable)")
        if args.problems and len(args.dataset) > 1:
            raise ValueError("--problems needs exactly one --dataset")
        context = context_from_args(args)
        if args.rollouts:
            context = context_for("gvr", context, gvr_rollouts=args.rollouts)
        if args.cache is not None:
            context.cache_path = args.cache or f"{args.out}.responses.sqlite"
        if not context.base_url:
            context.server_slots = max(context.server_slots, args.concurrency)
        per_dataset = []
        for name in args.dataset:
            tasks = select_tasks(load_dataset(name, args.data_dir), problems=args.problems.split(",") if
                                 args.problems else None, limit=args.limit, sample=args.sample, seed=args.seed)
            per_dataset.append([(dataset_label(name), t) for t in tasks])
        drawn = sum(map(len, per_dataset))
        err.print(f"collect-prm: {drawn} problems of {', '.join(map(dataset_label, args.dataset))}, model "
                  f"{context.model}; data in {args.out} (the problems it holds are skipped)", markup=False)
        with Progress(TextColumn("collect-prm"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.fields[status]}"), console=err) as bar:
            task = bar.add_task("collect", total=None, status="")
            searching = InFlight()  # runs named "collect-prm <dataset>"

            def show() -> None:
                running = searching.in_flight()
                bar.update(task, status=f"  {in_flight_line(running)}" if running else "")

            def on_problem(problem: dict, i: int, total: int) -> None:
                searching.finish(f"collect-prm {problem['dataset']}", problem["problem_id"])
                bar.update(task, total=total, completed=i, status="")
                if problem.get("skipped"):
                    if problem["skipped"] != UNLABELABLE:  # a model fault or a raise: a rerun collects it
                        unwritten.append(f"{problem['dataset']} {problem['problem_id']}")
                    # an exception's text may hold "[...]", which rich would read as markup
                    err.print(f"{problem['dataset']} {problem['problem_id']}: skipped ({problem['skipped']})  "
                              f"[{i}/{total}]", markup=False)
                    return
                err.print(f"{problem['dataset']} {problem['problem_id']}: {problem['samples']} samples from "
                          f"{problem['codes']} programs, mean label {problem['mean_label']}, {problem['tokens']:,} "
                          f"tokens, {problem['wall_s']:.0f} s  [{i}/{total}]", markup=False)

            with heartbeat(searching, show, live=err.is_terminal):
                added = collect(interleave(per_dataset), args.out, context, label=args.label, on_problem=on_problem,
                                on_start=lambda dataset, problem_id, clock: searching.start(
                                    f"collect-prm {dataset}", problem_id, clock), concurrency=args.concurrency)
        err.print(f"added {added} problems to {args.out}")
        if unwritten:  # a model fault or a raise: the data is incomplete, in the exit status too, for scripts
            err.print(f"{len(unwritten)} problem(s) not collected ({first_few(unwritten)}): a rerun collects them",
                      markup=False)
    if not Path(args.out).exists():  # nothing collected yet (every problem skipped or cut short)
        if args.stats:
            raise ValueError(f"no data file {args.out}: collect it first (--dataset ...)")
        return EXIT_INCOMPLETE if unwritten else 0
    print(json.dumps(label_distribution(args.out), indent=2))
    return EXIT_INCOMPLETE if unwritten else 0
