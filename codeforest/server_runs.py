"""Solving on a LangGraph Server: one thread per (run, problem), ``runs.create`` then join (``bench --server``).

The server receives the public problem and the graph's settings, nothing else; the harness scores the
returned program on the private tests locally, as for a local run. Thread ids are derived from the
results folder, the run's label and the problem, so a rerun finds the threads of the run before it: a
finished server run is collected instead of repeated, one still going is joined, a failed one is rerun.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx
from langgraph_sdk import get_sync_client

from codeforest.api import run_config
from codeforest.bench import OPERATIONAL_FIELDS, RunnerLost
from codeforest.context import Context
from codeforest.cost import add_cost
from codeforest.graphs.state import OUTPUT_KEYS
from codeforest.problems import Problem
from codeforest.tools.redaction import redact

NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "codeforest:bench")  # of the thread ids
LOCAL_ONLY = frozenset({"cache_path"})  # a path on this machine; the server keeps its own cache settings
FINISHED = ("success", "error", "timeout", "interrupted")


class ServerRunError(RuntimeError):
    """The server ran the graph and the run failed (an error record, not a lost connection)."""


class ServerLost(RunnerLost):
    """The server could not be reached: nothing is recorded, and a rerun resumes."""


def server_context(context: Context) -> dict:
    """The settings sent with a run: every field that can change a result at its value, defaults included (a
    given value wins over the server's own environment, so it cannot change what the record says was run), the
    model, and the operational fields set away from their defaults; never the local-only ones."""
    values = context.model_dump()
    sent = {"model": context.model, **context.model_dump(exclude_defaults=True),
            **{k: v for k, v in values.items() if k not in OPERATIONAL_FIELDS}}
    return {k: v for k, v in sent.items() if k not in LOCAL_ONLY}


class ServerSolver:
    """Runs graphs on a LangGraph Server at ``url``; called like ``api.solve`` by the bench."""

    def __init__(self, url: str, out_dir: str | Path, *, api_key: str | None = None, join_timeout: float = 300.0):
        self.url = url
        self.scope = str(Path(out_dir).resolve())
        self.client = get_sync_client(url=url, api_key=api_key,
                                      timeout=httpx.Timeout(join_timeout, connect=10.0))

    def thread_id(self, key: str) -> str:
        """The thread of one (run label, problem) of this results folder, the same on every rerun."""
        return str(uuid.uuid5(NAMESPACE, f"{self.scope}\n{key}"))

    def __call__(self, problem: Problem, graph: str, context: Context, key: str) -> dict:
        """The graph's output for ``problem`` (public part only), as ``api.solve`` returns it."""
        started = time.monotonic()
        try:
            values = self._run(problem, graph, context, self.thread_id(key), key)
        except (httpx.TransportError, ConnectionError) as exc:
            raise ServerLost(redact(f"lost the LangGraph Server at {self.url} ({type(exc).__name__}: {exc}); "
                                    "rerun the same command to resume")) from exc
        output = {k: values.get(k) for k in OUTPUT_KEYS}
        output["cost"] = {**add_cost(values.get("cost"), None), "wall_s": round(time.monotonic() - started, 3)}
        return output

    def _run(self, problem: Problem, graph: str, context: Context, thread_id: str, key: str) -> dict:
        self.client.threads.create(thread_id=thread_id, if_exists="do_nothing", graph_id=graph,
                                   metadata={"codeforest": key})
        runs = self.client.runs.list(thread_id, limit=1)  # newest first
        run = runs[0] if runs and runs[0]["status"] in ("pending", "running", "success") else None
        if run is not None and run["status"] == "success":
            return self.client.threads.get_state(thread_id)["values"]
        if run is None:
            run = self.client.runs.create(thread_id, graph, input={"problem": problem}, context=server_context(context),
                                          config=run_config(graph, context), multitask_strategy="reject")
        return self._join(thread_id, run["run_id"])

    def _join(self, thread_id: str, run_id: str) -> dict:
        while True:
            try:
                values = self.client.runs.join(thread_id, run_id)
            except httpx.ReadTimeout:  # a long search: keep waiting
                continue
            status = self.client.runs.get(thread_id, run_id)["status"]
            if status == "success":
                return values
            if status in FINISHED:
                detail = values.get("__error__") if isinstance(values, dict) else None
                raise ServerRunError(f"the server's run ended with status {status!r}: {detail or values}")
