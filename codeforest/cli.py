"""The ``codeforest`` command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import textwrap
import threading
import time

from rich.console import Console
from rich.markup import escape

from codeforest.bench import FolderBusy, RunnerLost, in_flight_line
from codeforest.context import Context
from codeforest.graphs.state import tokens_spent
from codeforest.problems import DatasetError, Task, load_dataset, load_problem
from codeforest.prompts import PromptError, check_prompts_dir
from codeforest.registry import context_for, graph_names
from codeforest.tools.knowledge import KnowledgeError
from codeforest.tools.models import ModelError, redact
from codeforest.tools.sandbox_e2b import SandboxServiceError

err = Console(stderr=True, highlight=False, soft_wrap=True)
EXIT_MODEL_ERROR = 3  # solve: the model endpoint failed after its retries; the output holds the partial result


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``codeforest`` command."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (DatasetError, ModelError, PromptError, SandboxServiceError, FolderBusy, KnowledgeError, RunnerLost,
            ValueError) as exc:
        err.print(f"[red]error:[/red] {escape(redact(str(exc)))}")
        return 2
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


SETTINGS_EPILOG = ("Every other setting (a graph's own, such as gvr_rollouts, verifier, codetree_evaluator; see the "
                   "README's Configuration) comes from the environment as CODEFOREST_<FIELD>, e.g. "
                   "CODEFOREST_VERIFIER=http CODEFOREST_VERIFIER_URL=http://127.0.0.1:9000/score")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codeforest", description="Tree-search code-generation agents.")
    sub = parser.add_subparsers(dest="command")

    solve = sub.add_parser("solve", help="solve one problem with one graph", epilog=SETTINGS_EPILOG)
    where = solve.add_mutually_exclusive_group(required=True)
    where.add_argument("--dataset", help="humaneval, mbpp500, apps_introductory150, apps_interview150, "
                                         "codecontests150, apps_stdio150, or a path to a .jsonl file")
    where.add_argument("--problem-file", help="a .jsonl/.json file in the benchmark format")
    solve.add_argument("--problem", help="problem id, e.g. HumanEval/0 (optional with a one-problem file)")
    solve.add_argument("--graph", default="direct", choices=graph_names())
    solve.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    solve.add_argument("--show-nodes", action="store_true", help="print the node table after the code")
    _add_context_args(solve)
    solve.set_defaults(func=cmd_solve)

    bench = sub.add_parser("bench", help="run graphs on a dataset at their budgets; resumable", epilog=SETTINGS_EPILOG)
    bench.add_argument("--graph", action="append", required=True, choices=graph_names(),
                       help="a graph to run (repeat for several)")
    bench.add_argument("--dataset", required=True, help="a dataset name or a .jsonl path")
    pick = bench.add_mutually_exclusive_group()
    pick.add_argument("--problems", help="comma-separated problem ids")
    pick.add_argument("--limit", type=_positive_int, help="the first N problems")
    pick.add_argument("--sample", type=_positive_int, help="N problems drawn at random (with --seed)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--concurrency", type=_positive_int, default=1, help="problems solved at once")
    bench.add_argument("--out", help="results folder (default: runs/<dataset>-<model>)")
    bench.add_argument("--cache", nargs="?", const="", metavar="PATH",
                       help="cache model responses in an SQLite file (default: <out>/responses.sqlite)")
    bench.add_argument("--retry-errors", action="store_true", help="rerun problems whose graph raised")
    bench.add_argument("--server", metavar="URL",
                       help="run the graphs on a LangGraph Server (e.g. http://127.0.0.1:2024): one thread per run, "
                            "only the public problem is sent; private tests are scored here")
    budget = bench.add_mutually_exclusive_group()
    budget.add_argument("--token-budget", metavar="N[,N...]",
                        help="run every graph at each token budget (e.g. 2000,8000,32k), largest first; the budgets "
                             "share <out>/responses.sqlite (with or without --cache), so the smaller ones replay the "
                             "larger runs' calls")
    budget.add_argument("--tokens-of", metavar="GRAPH", choices=graph_names(),
                        help="run at the mean tokens per problem GRAPH spent at its defaults in <out>: plain "
                             "resampling at a search's tokens (CODEFOREST_RESAMPLE_N=1000: as many samples as fit)")
    _add_context_args(bench)
    bench.set_defaults(func=cmd_bench)

    rep = sub.add_parser("report", help="summarize a bench results folder and plot pass@1 against tokens")
    rep.add_argument("out", help="a folder written by codeforest bench")
    rep.add_argument("--json", action="store_true")
    rep.add_argument("--html", action="store_true", help="also write DIR/report.html: tables, curves and every "
                                                          "search tree, one self-contained page")
    rep.set_defaults(func=cmd_report)

    check = sub.add_parser("check", help="run your program on a problem's tests in the sandbox")
    check.add_argument("program", help="a Python file")
    where = check.add_mutually_exclusive_group(required=True)
    where.add_argument("--dataset", help="a dataset name or .jsonl path (with --problem)")
    where.add_argument("--problem-file", help="a .jsonl/.json file in the benchmark format")
    check.add_argument("--problem", help="problem id")
    check.add_argument("--private", action="store_true", help="also run the private tests")
    check.add_argument("--backend", choices=["local", "e2b"], help="sandbox backend (default: local)")
    check.add_argument("--timeout", type=float, default=5.0, help="seconds per test")
    check.add_argument("--data-dir", help="benchmark folder")
    check.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    check.set_defaults(func=cmd_check)

    bench_sb = sub.add_parser("bench-sandbox", help="time the sandbox against a bare interpreter")
    bench_sb.add_argument("--repeat", type=int, default=20)
    bench_sb.add_argument("--json", action="store_true")
    bench_sb.set_defaults(func=cmd_bench_sandbox)

    scale = sub.add_parser("bench-concurrency", help="how graphs scale with a fast endpoint: a scripted one on "
                                                     "127.0.0.1 answers every call after a fixed delay")
    scale.add_argument("--graph", action="append", choices=graph_names(),
                       help="a graph to run (repeat; default: direct, codetree, bester)")
    scale.add_argument("--dataset", default="humaneval", help="a dataset name or a .jsonl path (default humaneval)")
    scale.add_argument("--concurrency", type=_positive_ints, default=[1, 8, 32], metavar="N[,N...]",
                       help="problems at once; N problems run at N and one at a time (default 1,8,32)")
    scale.add_argument("--inside", type=_positive_ints, default=[1, 5], metavar="N[,N...]",
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
    model_b.add_argument("--out", default="runs/bench-model", help="folder for bench-model.json and bench-model.md")
    model_b.add_argument("--record", action="store_true",
                         help="record calls instead: --graph on --dataset's --problems, written to --calls")
    model_b.add_argument("--graph", action="append", choices=graph_names(), help="with --record (repeat)")
    model_b.add_argument("--dataset", default="humaneval", help="with --record")
    model_b.add_argument("--problems", help="with --record: comma-separated problem ids")
    model_b.add_argument("--per-node", type=_positive_int, default=2, help="with --record: calls kept per graph node")
    model_b.add_argument("--data-dir", help="benchmark folder")
    model_b.set_defaults(func=cmd_bench_model)

    kb = sub.add_parser("kb", help="the RPM-MCTS knowledge base: build it, look into it")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    build = kb_sub.add_parser("build", help="steps of reference solutions (model calls, resumable), then embeddings")
    build.add_argument("--from", dest="sources", action="append", default=[], metavar="DATASET",
                       help="a function-style dataset with reference solutions, e.g. mbpp500 (repeat for several)")
    build.add_argument("--from-steps", nargs="?", const="", metavar="FILE",
                       help="embed a steps JSONL written earlier, no model calls (no FILE: the packaged steps)")
    build.add_argument("--out", help="the knowledge-base folder (default: the user cache's default KB)")
    build.add_argument("--steps", help="the steps JSONL to write and resume (default: <out>/steps.jsonl)")
    build.add_argument("--limit", type=_positive_int, help="write the steps of at most N more problems")
    build.add_argument("--cache", nargs="?", const="", metavar="PATH",
                       help="cache model responses in an SQLite file (default: <out>/responses.sqlite)")
    _add_context_args(build, search=False)
    build.set_defaults(func=cmd_kb_build)
    retopic = kb_sub.add_parser("retopic", help="reclassify a steps file's topics with RPM-MCTS's own topic call "
                                                 "(model calls, resumable); then `kb build --from-steps FILE`")
    retopic.add_argument("--steps", required=True, help="the steps JSONL to rewrite")
    _add_context_args(retopic, search=False, data=False)
    retopic.set_defaults(func=cmd_kb_retopic)
    query = kb_sub.add_parser("query", help="the stored step prefixes nearest to a text")
    query.add_argument("text", help="a problem, optionally followed by steps")
    query.add_argument("--kb", help="the knowledge-base folder (default: the default KB)")
    query.add_argument("--topic", help="only documents of this topic (one of the 14)")
    query.add_argument("-k", type=_positive_int, default=3)
    query.set_defaults(func=cmd_kb_query)
    sanity = kb_sub.add_parser("sanity", help="how often a reworded stored problem finds itself top-1")
    sanity.add_argument("--kb", help="the knowledge-base folder (default: the default KB)")
    sanity.add_argument("--steps", help="the steps JSONL it was built from (default: the packaged steps)")
    sanity.add_argument("--limit", type=_positive_int, default=50)
    sanity.set_defaults(func=cmd_kb_sanity)

    prm = sub.add_parser("collect-prm", help="CodePRM training data: thought trees labelled by pass rates; resumable",
                         epilog=SETTINGS_EPILOG + " (here GVR runs without refinement and without a selector)")
    prm.add_argument("--dataset", action="append", default=[], metavar="DATASET",
                     help="a dataset name or .jsonl path (repeatable; problems are interleaved)")
    pick = prm.add_mutually_exclusive_group()
    pick.add_argument("--problems", help="comma-separated problem ids (with one --dataset)")
    pick.add_argument("--limit", type=_positive_int, help="the first N problems of each dataset")
    pick.add_argument("--sample", type=_positive_int, help="N problems of each dataset drawn at random (--seed)")
    prm.add_argument("--seed", type=int, default=0, help="the seed of --sample's draw (default 0)")
    prm.add_argument("--out", required=True, help="the data file (JSONL) to write and resume")
    prm.add_argument("--rollouts", type=_positive_int,
                     help="rollouts per problem (default: gvr_rollouts, 16 unless CODEFOREST_GVR_ROLLOUTS says)")
    prm.add_argument("--label", choices=["private", "mean"], default="private",
                     help="a code's score: its private pass rate (the paper) or the mean of public and private "
                          "(the released code)")
    prm.add_argument("--stats", action="store_true", help="only print the label distribution of --out")
    prm.add_argument("--cache", nargs="?", const="", metavar="PATH",
                     help="cache model responses in SQLite (default PATH: <out>.responses.sqlite)")
    _add_context_args(prm, selector=False)  # every code of the tree is labelled, none is chosen
    prm.set_defaults(func=cmd_collect_prm)

    serve = sub.add_parser("serve", help="run the embedded model server in the foreground")
    serve.add_argument("--model", default="local", help="local (1.5B, default), small (0.5B) or a .gguf path")
    serve.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (0 = any free port)")
    serve.add_argument("--n-ctx", type=int, default=8192)
    serve.add_argument("--verbose", action="store_true", help="show llama.cpp's log")
    serve.set_defaults(func=cmd_serve)
    return parser


def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_ints(text: str) -> list[int]:
    """An argparse type: comma-separated whole numbers of at least 1, e.g. ``1,8,32``."""
    return sorted({_positive_int(part.strip()) for part in text.split(",") if part.strip()})


def _add_context_args(p: argparse.ArgumentParser, *, search: bool = True, selector: bool = True,
                      data: bool = True) -> None:
    """The model and prompt flags; ``search``: also the sandbox's, and the selector's unless ``selector`` is False;
    ``data``: --data-dir."""
    p.add_argument("--model", help="local (embedded 1.5B, default), small (embedded 0.5B), a .gguf path, "
                                   "or a model name at --base-url")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1")
    p.add_argument("--api-key-env", help="environment variable holding the endpoint's key")
    p.add_argument("--temperature", type=float)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--request-timeout", type=float, help="seconds to wait for one model call (default 600)")
    p.add_argument("--retries", type=int, help="retries of a failed model call, with backoff (default 2)")
    p.add_argument("--prompts-dir", help="folder of prompt YAML files overriding the packaged ones")
    if search:
        p.add_argument("--sandbox", choices=["local", "e2b"])
        p.add_argument("--timeout", dest="test_timeout", type=float, help="seconds per public test")
    if search and selector:
        p.add_argument("--selector", choices=["public", "agreement", "codet", "differential"],
                       help="how the final program is chosen among the search's programs (default: public, the "
                            "paper's)")
        p.add_argument("--min-candidates", type=_positive_int,
                       help="public-passing programs to collect before a search stops (default 1)")
        p.add_argument("--selector-model", help="the model the Tester and the judge use (default: --model), "
                                                "at --selector-base-url or embedded")
        p.add_argument("--selector-base-url", help="OpenAI-compatible endpoint of --selector-model")
        p.add_argument("--selector-api-key-env", help="environment variable holding that endpoint's key")
    if data:
        p.add_argument("--data-dir", help="benchmark folder (default: $CODEFOREST_DATA or ../shared/data)")


def context_from_args(args: argparse.Namespace) -> Context:
    """A Context from the CLI flags that were given (others: env or defaults)."""
    given = {k: getattr(args, k) for k in ("model", "base_url", "api_key_env", "temperature", "max_tokens",
                                           "request_timeout", "retries", "sandbox", "test_timeout", "prompts_dir",
                                           "selector", "min_candidates", "selector_model", "selector_base_url",
                                           "selector_api_key_env")
             if getattr(args, k, None) is not None}
    context = Context(**given)
    if context.prompts_dir:
        check_prompts_dir(context.prompts_dir)  # a broken prompt file fails before the model is loaded
    return context


def _note_single_candidate(context: Context) -> None:
    """Point out a selector that will mostly have one program to choose from (solve and bench only)."""
    if context.selector != "public" and context.min_candidates == 1:
        err.print(f"[yellow]note:[/yellow] selector {context.selector} with min_candidates 1: searches that stop at "
                  "their first public-passing program (resample, codetree, bester, reflexion, rpm_mcts) leave it "
                  "one candidate then; raise --min-candidates to give it a choice (e.g. resample_n for resample)")


def _task_from_args(args: argparse.Namespace) -> Task:
    if args.problem_file:
        tasks = load_dataset(args.problem_file)
        if args.problem:
            matches = [t for t in tasks if t.id == args.problem]
            if not matches:
                raise DatasetError(f"No problem {args.problem!r} in {args.problem_file}")
            return matches[0]
        if len(tasks) != 1:
            raise DatasetError(f"{args.problem_file} holds {len(tasks)} problems; choose one with --problem")
        return tasks[0]
    if not args.problem:
        raise DatasetError("--dataset needs --problem ID")
    return load_problem(args.dataset, args.problem, args.data_dir)


def cmd_solve(args: argparse.Namespace) -> int:
    """Solve one problem, score it on private tests when it has them, report."""
    from codeforest.api import solve
    from codeforest.scoring import score_private
    from codeforest.tools.models import embedded_spec, ensure_model_file

    context = context_from_args(args)
    _note_single_candidate(context)
    task = _task_from_args(args)
    err.print(f"[bold]{task.id}[/bold] from {task.source} with graph [bold]{args.graph}[/bold], model "
              f"{context.model}" + (f" at {escape(redact(context.base_url))}" if context.base_url else " (embedded)"))
    if not context.base_url and embedded_spec(context.model):
        ensure_model_file(embedded_spec(context.model), progress=err.print)

    with err.status("starting ...") as status:
        def on_event(event: dict) -> None:
            text = _describe(event)
            status.update(text)
            if event.get("event") in ("executed", "decision", "verdict", "reward", "rethink", "selected", "finished"):
                err.print(f"  {text}")

        output = solve(task.problem, args.graph, context=context, on_event=on_event)
    score = score_private(task, output["final_code"] or "", backend=context.sandbox)
    output["private_passed"] = score.passed
    output["private_pass_rate"] = score.pass_rate
    result = {"problem_id": task.id, "graph": args.graph, "model": context.model, **output}
    if args.json:
        print(json.dumps(_json_order(result), indent=None))
    else:
        _print_human(result, args.show_nodes)
    return EXIT_MODEL_ERROR if output["stop_reason"] == "model_error" else 0


def _json_order(result: dict) -> dict:
    keys = ["problem_id", "graph", "model", "final_code", "final_node", "stop_reason", "error", "public_pass_rate",
            "private_passed", "private_pass_rate", "selection", "cost", "nodes"]
    return {k: result.get(k) for k in keys}


def _describe(event: dict) -> str:
    kind = event.get("event", "?")
    node = event.get("node")
    if kind == "executed":
        return f"node {node}: {event.get('passed')}/{event.get('total')} public tests passed"
    if kind == "finished":
        return f"finished: {event.get('stop_reason')} (final node {node})"
    if kind == "decision":
        return f"node {node}: {event.get('decision')} ({event.get('reason')}), value {event.get('value')}"
    if kind == "verdict":
        if "v_llm" in event:
            return f"node {node}: self-evaluation {event['v_llm']}"
        judged = f"score {event['score']}/5" if "score" in event else \
            ("accepted" if event.get("accepted") else "rejected")
        return f"node {node}: Critic {judged}"
    if kind in ("reward", "rethink", "backpropagated"):
        details = ", ".join(f"{k}={str(v)[:60]}" for k, v in event.items() if k not in ("event", "node"))
        return f"node {node}: {kind} {details}"
    if kind == "node_created":
        origin = f" from {event['parent']}" if event.get("parent") else ""
        return f"node {node} (depth {event.get('depth')}){origin}: {str(event.get('text', ''))[:70]}"
    if kind == "selected":
        return (f"round {event.get('round')}: chose node {node} ({event.get('passed')}/{event.get('total')} "
                f"public tests), best so far {event.get('best')}")
    if kind == "generated":
        return f"node {node}: program written"
    details = ", ".join(f"{k}={v}" for k, v in event.items() if k not in ("event", "node"))
    return f"{kind} {node or ''} {details}".strip()


def _print_human(result: dict, show_nodes: bool) -> None:
    out = Console(highlight=False)
    cost = result["cost"]
    private = result["private_passed"]
    verdict = {True: "[green]PASSED[/green]", False: "[red]FAILED[/red]", None: "unknown (no private tests)"}
    out.print(f"[bold]{result['problem_id']}[/bold]  graph={result['graph']}  stop={result['stop_reason']}")
    if result.get("error"):
        out.print(f"[red]the search ended early:[/red] {escape(result['error'])} (the best program so far is below)")
    rate = result["public_pass_rate"]
    public = "none to run (unverified)" if rate is None else f"{rate:.0%}"
    out.print(f"public tests: {public}   private tests: {verdict[private]}")
    out.print(f"cost: {cost['llm_calls']} LLM calls, {cost['prompt_tokens']}+{cost['completion_tokens']} tokens, "
              f"{cost['programs']} programs, {cost['sandbox_runs']} sandbox runs, {cost['wall_s']:.1f} s")
    out.rule("final code")
    out.print(result["final_code"] or "(none)", markup=False)
    if show_nodes:
        out.rule("nodes")
        out.print_json(json.dumps(result["nodes"]))


def cmd_bench(args: argparse.Namespace) -> int:
    """Run graphs x problems, appending one record per finished pair; then print the report."""
    from pathlib import Path

    from codeforest.bench import Bench, mean_tokens_of, parse_budgets, read_results, select_tasks, write_samples
    from codeforest.tools.models import embedded_spec, ensure_model_file

    context = context_from_args(args)
    _note_single_candidate(context)
    tasks = load_dataset(args.dataset, args.data_dir)
    problems = args.problems.split(",") if args.problems else None
    tasks = select_tasks(tasks, problems=problems, limit=args.limit, sample=args.sample, seed=args.seed)
    dataset = Path(args.dataset).stem if args.dataset.endswith((".jsonl", ".json")) else args.dataset
    out = Path(args.out or f"runs/{dataset}-{Path(context.model).stem}")
    if args.tokens_of:  # --tokens-of and --token-budget exclude each other
        budgets = [mean_tokens_of(read_results(out), args.tokens_of)]
        err.print(f"{args.tokens_of} spent {budgets[0]:,} tokens a problem in {out}: the token budget")
    else:
        budgets = parse_budgets(args.token_budget) if args.token_budget else [context.token_budget]
    if args.cache is not None:
        context.cache_path = args.cache or str(out / "responses.sqlite")
    elif len(budgets) > 1 and not context.cache_path and not args.server:
        context.cache_path = str(out / "responses.sqlite")  # the smaller budgets replay the larger runs' calls
        err.print(f"A token-budget sweep shares the response cache {context.cache_path} (--cache PATH for another)")
    runner = None
    if args.server:  # the server runs the model: nothing to start or download here
        from codeforest.server_runs import ServerSolver

        runner = ServerSolver(args.server, out)
    elif not context.base_url:
        context.server_slots = max(context.server_slots, args.concurrency)
        if embedded_spec(context.model):
            ensure_model_file(embedded_spec(context.model), progress=err.print)
    for budget in budgets:
        context.token_budget = budget
        _run_bench(Bench(args.graph, tasks, out, context=context, dataset=dataset, concurrency=args.concurrency,
                         retry_errors=args.retry_errors, runner=runner), context, dataset, budget)
    write_samples(out)
    return cmd_report(argparse.Namespace(out=str(out), json=False))


def _run_bench(bench, context: Context, dataset: str, budget: int) -> None:
    """One bench pass with a progress bar and one log line per finished problem."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    limit = f", token budget {budget:,}" if budget else ""
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
                verdict = "solved" if record["private_passed"] else "failed"
                err.print(f"{record['graph']} {record['problem_id']}: {verdict} ({record['stop_reason']}), "
                          f"{record['llm_calls']} calls, {tokens_spent(record):,} "
                          f"tokens, {record['wall_s']:.0f} s  [{progress.done}/{progress.total}]")

        with _heartbeat(bench, show, live=err.is_terminal):
            bench.run(on_progress)


@contextlib.contextmanager
def _heartbeat(bench, show, *, live: bool, every_s: float = 2.0, log_every_s: float = 600.0):
    """While a bench runs, refresh the bar's in-flight count (a terminal), or, when the log is a file, print what is
    running every ``log_every_s``: a search can take an hour between two finished problems."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every_s if live else log_every_s):
            if live:
                show()
            elif running := bench.in_flight():
                err.print(f"{time.strftime('%H:%M:%S')} in flight: {in_flight_line(running)}")

    thread = threading.Thread(target=beat, name="bench-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def cmd_report(args: argparse.Namespace) -> int:
    """Print pass@1 (95% interval), pass rate and cost per graph; write the plot and report.md."""
    from codeforest.report import MARKDOWN, SUMMARY_COLUMNS, report, summary_cells

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
    for column in SUMMARY_COLUMNS:
        table.add_column(column, justify="left" if column in ("graph", "model", "budget") else "right")
    for r in rows:
        table.add_row(*summary_cells(r))
    out = Console()
    if not out.is_terminal:
        out.width = 160  # a file or a pipe: do not squeeze the table into 80 columns
    out.print(table)
    err.print(f"plot: {plot_path}; Markdown report: {plot_path.parent / MARKDOWN}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Run a user's program on a problem's public (and, with --private, private) tests; exit 1 on a failure."""
    from pathlib import Path

    from codeforest.problems import public_suite
    from codeforest.tools.sandbox import isolation, run

    code = Path(args.program).read_text(encoding="utf-8")
    task = _task_from_args(args)
    suites = {"public": public_suite(task.problem)}
    if args.private:
        if task.private_tests is None:
            raise DatasetError(f"{task.id} has no private tests")
        suites["private"] = task.private_tests
    report = {"problem_id": task.id, "isolation": isolation(args.backend), "passed": 0, "total": 0, "outcomes": []}
    for name, suite in suites.items():
        result = run(code, suite, timeout=args.timeout, backend=args.backend)
        report["passed"] += result.passed
        report["total"] += result.total
        for outcome in result.outcomes:
            report["outcomes"].append({"suite": name, "test": outcome.test, "passed": outcome.passed,
                                       "reason": None if outcome.passed else (outcome.reason or "error"),
                                       "expected": outcome.expected, "actual": outcome.actual,
                                       "error": outcome.error, "traceback": outcome.traceback,
                                       "timed_out": outcome.timed_out})
    if args.json:
        print(json.dumps(report))
    else:
        _print_check(report)
    return 0 if report["passed"] == report["total"] else 1


def _print_check(report: dict) -> None:
    out = Console(highlight=False)
    out.print(f"[bold]{report['problem_id']}[/bold]: {report['passed']}/{report['total']} tests passed")
    for o in report["outcomes"]:
        mark = "[green]PASS[/green]" if o["passed"] else f"[red]FAIL[/red] ({o['reason']})"
        test = o["test"].strip().splitlines()[-1] if o["test"].strip() else repr(o["test"])
        suite = escape("[" + o["suite"] + "]")
        out.print(f"  {mark} {suite} {escape(test[:100])}")
        if not o["passed"]:
            detail = o["traceback"] or o["error"] or f"expected {o['expected']!r}, got {o['actual']!r}"
            if o["reason"] == "wrong answer" and o["actual"] is not None:
                detail = f"expected {o['expected']}, got {o['actual']}"
            out.print(textwrap.indent(detail[:600], "        "), markup=False)


def cmd_bench_sandbox(args: argparse.Namespace) -> int:
    """Print the median time of a 5-test program per runner and its ratio to a bare interpreter."""
    from codeforest.sandbox_bench import bench_sandbox

    report = bench_sandbox(args.repeat)
    if args.json:
        print(json.dumps(report))
        return 0
    out = Console(highlight=False)
    out.print(f"A {report['tests']}-test program, median of {report['repeat']} runs:")
    for row in report["rows"]:
        out.print(f"  {row['runner']:<28} {row['median_ms']:8.1f} ms   {row['ratio']:.2f}x")
    return 0


def cmd_bench_concurrency(args: argparse.Namespace) -> int:
    """Time each graph one problem at a time and N at a time against the scripted endpoint; print the table."""
    from pathlib import Path

    from codeforest.concurrency_bench import bench_concurrency, markdown

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

    dataset = Path(args.dataset).stem
    rows = bench_concurrency(graphs, tasks, out, context=context, dataset=dataset, concurrencies=args.concurrency,
                             delay=args.delay, inside=args.inside, on_row=on_row)
    table = markdown(rows)
    (out / "concurrency.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


def cmd_bench_model(args: argparse.Namespace) -> int:
    """Record role calls (--record), or replay them under each server setting and print the table."""
    from pathlib import Path

    from codeforest.bench import select_tasks
    from codeforest.model_bench import PACKAGED_CALLS, SETTINGS, bench_model, markdown, record_calls
    from codeforest.tools.models import resolve_gguf

    gguf = resolve_gguf(args.model, progress=err.print)
    if gguf is None:
        raise ValueError("bench-model measures the embedded server: --model local, small or a .gguf path")
    calls = Path(args.calls) if args.calls else PACKAGED_CALLS
    if args.record:
        if not args.graph or not args.problems:
            raise ValueError("--record needs --graph and --problems")
        tasks = select_tasks(load_dataset(args.dataset, args.data_dir), problems=args.problems.split(","))
        recorded = record_calls(args.graph, [t.problem for t in tasks], Context(model=args.model), args.per_node,
                                on_problem=lambda g, p: err.print(f"recorded {g} on {p}"))
        calls.write_text("".join(json.dumps(c) + "\n" for c in recorded), encoding="utf-8")
        err.print(f"{len(recorded)} calls in {calls}")
        return 0
    settings = args.setting or list(SETTINGS)
    err.print(f"replaying {calls} with {gguf.name}: the baseline twice, then {', '.join(settings)}")

    def on_setting(line: dict) -> None:
        err.print(f"{line['setting']}: {line['wall_s']} s, decode {line['decode_tps']} tok/s, "
                  f"peak {line['peak_rss_mb']} MB, {len(line['differ'])} replies differ")

    report = bench_model(gguf, calls, settings, on_setting)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench-model.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    table = markdown(report)
    (out / "bench-model.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


def cmd_kb_build(args: argparse.Namespace) -> int:
    """Write steps with the model (resumable) and embed them, or embed a steps file; report what the KB holds."""
    import time
    from pathlib import Path

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from codeforest.kb import PACKAGED_STEPS, default_kb_path, read_steps, write_steps
    from codeforest.tools.knowledge import KnowledgeBase

    if not args.sources and args.from_steps is None:
        raise ValueError("give --from DATASET (model calls) or --from-steps [FILE] (embeddings only)")
    out = Path(args.out) if args.out else default_kb_path()
    steps = Path(args.from_steps or PACKAGED_STEPS) if args.from_steps is not None else \
        Path(args.steps or out / "steps.jsonl")
    if args.sources:
        context = context_from_args(args)
        if args.cache is not None:
            context.cache_path = args.cache or str(out / "responses.sqlite")
        started = time.monotonic()
        with Progress(TextColumn("steps"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.fields[last]}"), console=err) as bar:
            task = bar.add_task("steps", total=None, last="")

            def on_step(record: dict, i: int, total: int) -> None:
                line = f"{record['source']} {record['id']}: {len(record['steps'])} steps, {record['topic']}"
                bar.update(task, total=total, completed=i, last=line)
                err.print(f"{line}, {record['tokens']} tokens, {time.monotonic() - started:.0f} s  [{i}/{total}]")

            written = write_steps(args.sources, steps, context, data_dir=args.data_dir, limit=args.limit,
                                  on_step=on_step)
        err.print(f"wrote the steps of {written} problems to {steps} in {time.monotonic() - started:.0f} s")
    records = read_steps(steps)
    started = time.monotonic()
    kb = KnowledgeBase(out, create=True)
    added = kb.add(records)
    err.print(f"embedded {added} new problems in {time.monotonic() - started:.1f} s; {out} holds "
              f"{len(kb.manifest.get('problems', {}))} problems ({kb.manifest.get('documents', 0)} step prefixes) "
              f"from {', '.join(kb.manifest.get('datasets', [])) or 'nothing yet'}")
    return 0


def cmd_kb_retopic(args: argparse.Namespace) -> int:
    """Give every record of a steps file the topic the search's own classifier picks (resumable)."""
    import time

    from codeforest.kb import retopic

    context = context_from_args(args)
    started = time.monotonic()

    def on_record(record: dict, i: int, total: int) -> None:
        err.print(f"{record['source']} {record['id']}: {record['topic']} (steps call: {record['steps_topic']}), "
                  f"{time.monotonic() - started:.0f} s  [{i}/{total}]")

    done = retopic(args.steps, context, on_record=on_record)
    err.print(f"reclassified {done} problems of {args.steps} in {time.monotonic() - started:.0f} s")
    return 0


def cmd_collect_prm(args: argparse.Namespace) -> int:
    """Search each problem's thoughts, label every thought by its codes' pass rates, append the samples."""
    from pathlib import Path

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from codeforest.bench import select_tasks
    from codeforest.kb import interleave
    from codeforest.prm_data import collect, label_distribution

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
        per_dataset = []
        for name in args.dataset:
            tasks = select_tasks(load_dataset(name, args.data_dir), problems=args.problems.split(",") if
                                 args.problems else None, limit=args.limit, sample=args.sample, seed=args.seed)
            label = Path(name).stem if name.endswith((".jsonl", ".json")) else name
            per_dataset.append([(label, t) for t in tasks])
        with Progress(TextColumn("collect-prm"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err) as bar:
            task = bar.add_task("collect", total=None)

            def on_problem(problem: dict, i: int, total: int) -> None:
                bar.update(task, total=total, completed=i)
                if problem.get("skipped"):
                    err.print(f"{problem['dataset']} {problem['problem_id']}: skipped ({problem['skipped']})  "
                              f"[{i}/{total}]")
                    return
                err.print(f"{problem['dataset']} {problem['problem_id']}: {problem['samples']} samples from "
                          f"{problem['codes']} programs, mean label {problem['mean_label']}, {problem['tokens']:,} "
                          f"tokens, {problem['wall_s']:.0f} s  [{i}/{total}]")

            added = collect(interleave(per_dataset), args.out, context, label=args.label, on_problem=on_problem)
        err.print(f"added {added} problems to {args.out}")
    if not Path(args.out).exists():  # nothing collected yet (every problem skipped or cut short)
        if args.stats:
            raise ValueError(f"no data file {args.out}: collect it first (--dataset ...)")
        return 0
    print(json.dumps(label_distribution(args.out), indent=2))
    return 0


def cmd_kb_query(args: argparse.Namespace) -> int:
    """Print the nearest stored step prefixes with their similarity and metadata."""
    from codeforest.kb import default_kb_path
    from codeforest.tools.knowledge import KnowledgeBase

    kb = KnowledgeBase(args.kb or default_kb_path())
    out = Console(highlight=False)
    for hit in kb.search(args.text, k=args.k, topic=args.topic):
        out.print(f"[bold]{hit['similarity']:.3f}[/bold]  {hit['source']} {hit['problem_id']} "
                  f"({hit['topic']}, {hit['pre_steps_num']} steps)")
        out.print(textwrap.indent(hit["document"][-400:], "    "), markup=False)
    return 0


def cmd_kb_sanity(args: argparse.Namespace) -> int:
    """Print the retrieval sanity of a knowledge base (reworded problems finding themselves top-1)."""
    from codeforest.kb import PACKAGED_STEPS, open_knowledge, read_steps, retrieval_sanity

    kb = open_knowledge(args.kb)  # the default KB follows the packaged steps first (their topics may have moved)
    result = retrieval_sanity(kb, read_steps(args.steps or PACKAGED_STEPS), limit=args.limit)
    print(json.dumps(result))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the embedded model on 127.0.0.1 until interrupted."""
    from codeforest.tools.models import EmbeddedServer, resolve_gguf, tuning_from_env

    gguf = resolve_gguf(args.model, progress=err.print)
    if gguf is None:
        raise ModelError(f"{args.model!r} is not an embedded model name or a .gguf file")
    tuning = tuning_from_env()  # the settings solve and bench give their own server
    err.print(f"Loading {gguf.name} with llama.cpp settings {json.dumps(tuning)} ...")
    server = EmbeddedServer(gguf, port=args.port, n_ctx=args.n_ctx, verbose=args.verbose, tuning=tuning).start()
    err.print(f"Serving an OpenAI-compatible API at [bold]{server.base_url}/v1[/bold] (model {gguf.stem}); "
              "Ctrl-C stops it.")
    err.print(f"Use it with:  codeforest solve --base-url {server.base_url}/v1 --model {gguf.stem} ...")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
