"""``codeforest solve`` (one problem, one graph) and ``codeforest check`` (your program on a problem's tests)."""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from codeforest.cli.common import (
    SETTINGS_EPILOG,
    add_context_args,
    context_from_args,
    err,
    note_single_candidate,
    prepare_models,
    seconds,
)
from codeforest.cost import money_spent, per_model_text
from codeforest.loading import load_dataset, load_problem
from codeforest.problems import DatasetError
from codeforest.registry import check_run_roles, graph_names
from codeforest.scoring import FINAL_TIMEOUT_S, score_plus, score_private
from codeforest.tools.redaction import redact

if TYPE_CHECKING:
    from codeforest.problems import Task

EXIT_MODEL_ERROR = 3  # solve: the model endpoint failed after its retries; the output holds the partial result


def register(sub) -> None:
    """Add the solve and check commands to the ``codeforest`` subparsers."""
    solve = sub.add_parser("solve", help="solve one problem with one graph", epilog=SETTINGS_EPILOG)
    where = solve.add_mutually_exclusive_group(required=True)
    where.add_argument("--dataset", help="humaneval, mbpp500, apps_introductory150, apps_interview150, "
                                         "codecontests150, apps_stdio150, or a path to a .jsonl file")
    where.add_argument("--problem-file", help="a .jsonl/.json file in the benchmark format")
    solve.add_argument("--problem", help="problem id, e.g. HumanEval/0 or 0 (optional with a one-problem "
                                         "--problem-file)")
    solve.add_argument("--graph", default="direct", choices=graph_names(),
                       help="the search method (default direct, one call, no search; the documentation's Methods page)")
    solve.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    solve.add_argument("--show-nodes", action="store_true", help="print the node table after the code")
    add_context_args(solve)
    solve.set_defaults(func=cmd_solve)

    check = sub.add_parser("check", help="run your program on a problem's tests in the sandbox")
    check.add_argument("program", help="a Python file")
    where = check.add_mutually_exclusive_group(required=True)
    where.add_argument("--dataset", help="a dataset name or .jsonl path (with --problem)")
    where.add_argument("--problem-file", help="a .jsonl/.json file in the benchmark format")
    check.add_argument("--problem", help="problem id (optional with a one-problem --problem-file)")
    check.add_argument("--private", action="store_true", help="also run the private tests")
    check.add_argument("--backend", choices=["local", "e2b"],
                       help="sandbox backend (default: $CODEFOREST_SANDBOX, else local)")
    check.add_argument("--timeout", type=seconds, help="seconds per test (default: the search's public-test limit for "
                                                     f"public tests, the harness's {FINAL_TIMEOUT_S:g} s for private "
                                                     "ones, as bench scores them)")
    check.add_argument("--data-dir", help="benchmark folder")
    check.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    check.set_defaults(func=cmd_check)


def task_from_args(args: argparse.Namespace) -> Task:
    """The problem named by --dataset/--problem or --problem-file (one problem, or one chosen by --problem)."""
    if args.problem:
        return load_problem(args.problem_file or args.dataset, args.problem, args.data_dir)
    if not args.problem_file:
        raise DatasetError("--dataset needs --problem ID")
    tasks = load_dataset(args.problem_file)
    if not tasks:
        raise DatasetError(f"{args.problem_file} holds no problem")
    if len(tasks) != 1:
        raise DatasetError(f"{args.problem_file} holds {len(tasks)} problems; choose one with --problem")
    return tasks[0]


def cmd_solve(args: argparse.Namespace) -> int:
    """Solve one problem, score it on private tests when it has them, report."""
    from codeforest.api import solve
    from codeforest.context import shown_model
    from codeforest.graphs.kit import check_prices

    context = context_from_args(args)
    check_run_roles([args.graph], context)  # before a model download
    note_single_candidate(context)
    task = task_from_args(args)
    check_prices(context)  # a cost budget's missing price before a model download
    prepare_models(context, [args.graph])  # a download or a missing .gguf before the search
    err.print(f"[bold]{task.id}[/bold] from {task.source} with graph [bold]{args.graph}[/bold], model "
              f"{context.model}" + (f" at {escape(redact(context.base_url))}" if context.base_url else " (embedded)"))

    with err.status("starting ...") as status:
        def on_event(event: dict) -> None:
            text = describe_event(event)
            status.update(text)
            if event.get("event") in ("executed", "decision", "verdict", "reward", "rethink", "selected", "finished"):
                err.print(f"  {text}")

        output = solve(task.problem, args.graph, context=context, on_event=on_event)
    score = score_private(task, output["final_code"] or "", backend=context.sandbox)
    output["private_passed"] = score.passed
    output["private_pass_rate"] = score.pass_rate
    plus = score_plus(task, output["final_code"] or "", backend=context.sandbox)
    if plus is not None:  # EvalPlus: private_passed is the base verdict, plus_passed base + plus
        output["plus_passed"], output["plus_pass_rate"] = plus.passed, plus.pass_rate
    result = {"problem_id": task.id, "graph": args.graph, "model": shown_model(context.model), **output,
              "spent": money_spent(output["cost"], context.prices),
              "per_model": per_model_text(output["cost"], context.prices)}
    if args.json:
        print(json.dumps(_json_order(result), indent=None))
    else:
        _print_human(result, args.show_nodes)
    return EXIT_MODEL_ERROR if output["stop_reason"] == "model_error" else 0


def _json_order(result: dict) -> dict:
    keys = ["problem_id", "graph", "model", "final_code", "final_node", "stop_reason", "error", "public_pass_rate",
            "private_passed", "private_pass_rate", "selection", "cost", "spent", "nodes"]
    plus = ["plus_passed", "plus_pass_rate"] if "plus_passed" in result else []
    return {k: result.get(k) for k in keys + plus}


def describe_event(event: dict) -> str:
    """A progress event of a search as one line for a person."""
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
        if "round" not in event:  # the MCTS graphs: the path a rollout descends
            return f"selected node {node} by the path {' > '.join(map(str, event.get('path') or [node]))}"
        return (f"round {event['round']}: chose node {node} ({event.get('passed')}/{event.get('total')} "
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
    public = f"{rate:.0%}" if rate is not None else "none to run (unverified)" if result["final_code"] else "not run"
    plus = f"   plus tests (EvalPlus): {verdict[result['plus_passed']]}" if "plus_passed" in result else ""
    out.print(f"public tests: {public}   private tests: {verdict[private]}{plus}")
    out.print(f"cost: {cost['llm_calls']} LLM calls, {cost['prompt_tokens']}+{cost['completion_tokens']} tokens, "
              f"{cost['programs']} programs, {cost['sandbox_runs']} sandbox runs, {cost['wall_s']:.1f} s")
    if result.get("per_model"):
        out.print(f"per model: {escape(result['per_model'])}")
    out.rule("final code")
    out.print(result["final_code"] or "(none)", markup=False)
    if show_nodes:
        out.rule("nodes")
        out.print_json(json.dumps(result["nodes"]))


def cmd_check(args: argparse.Namespace) -> int:
    """Run a user's program on a problem's public (and, with --private, private) tests; exit 1 on a failure."""
    from codeforest.problems import public_suite
    from codeforest.tools.sandbox import isolation, run

    code = Path(args.program).read_text(encoding="utf-8")
    task = task_from_args(args)
    from codeforest.context import Context

    suites = {"public": (public_suite(task.problem), args.timeout or Context().test_timeout)}
    if args.private:
        if task.private_tests is None:
            raise DatasetError(f"{task.id} has no private tests")
        suites["private"] = (task.private_tests, args.timeout or FINAL_TIMEOUT_S)
    report = {"problem_id": task.id, "isolation": isolation(args.backend), "passed": 0, "total": 0, "outcomes": []}
    for name, (suite, timeout) in suites.items():
        result = run(code, suite, timeout=timeout, backend=args.backend)
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
