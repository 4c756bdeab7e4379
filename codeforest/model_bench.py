"""``codeforest bench-model``: the embedded llama.cpp server under different settings, on real role calls.

A fixed set of calls recorded from real searches (``record_calls``: Solver, Debugger, Thinker, Critic,
repairs, each labelled with its graph node) is replayed greedily, one after another, against a fresh
embedded server per setting, each in its own process (so its peak RSS is its own). Per setting: prompt and
decode tokens/s per role (llama.cpp's own timings), wall time, peak RSS, and which replies differ from the
baseline's. The baseline is replayed twice first: greedy replies are not always byte-identical between two
runs of one request (the prompt cache changes the numerics), so a setting counts as output-preserving when it
differs from the baseline on no more calls than the baseline differs from itself.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from codeforest import tools
from codeforest.tools.models import DEFAULT_TUNING, ModelError

BASELINE = "baseline"
# Each setting names llama.cpp server fields (tools.models.apply_tuning); the baseline is llama.cpp's stock server.
SETTINGS: dict[str, dict] = {
    BASELINE: {},
    "codeforest_default": DEFAULT_TUNING,
    "default_batch_512": {**DEFAULT_TUNING, "n_batch": 512},
    "ngram_simple": {"speculative.types": ["ngram_simple"]},
    "ngram_simple_n8": {"speculative.types": ["ngram_simple"], "speculative.ngram_simple.size_n": 8},
    "ngram_mod": {"speculative.types": ["ngram_mod"]},
    "cache_reuse_256": {"n_cache_reuse": 256},
    "host_cache_256mib": {"cache_ram_mib": 256},
    "batch_512": {"n_batch": 512},
    # one KV cache per slot: with several slots, each sequence attends over its own cells only, not all slots'
    "kv_split": {**DEFAULT_TUNING, "kv_unified": False},
    "threads_1": {"cpuparams.n_threads": 1, "cpuparams_batch.n_threads": 1},
}
PACKAGED_CALLS = Path(tools.__file__).resolve().parent / "model_bench_calls.jsonl"  # package data, also in a wheel


class RecordingChatModel(BaseChatModel):
    """Passes every call to ``inner`` and keeps it: the graph node that made it, the messages, the reply."""

    inner: BaseChatModel
    calls: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        result = self.inner._generate(messages, stop=stop, **kwargs)
        node = (getattr(run_manager, "metadata", None) or {}).get("langgraph_node", "?")
        limit = kwargs.get("max_tokens") or getattr(self.inner, "max_tokens", None)  # bound per call, or the model's
        self.calls.append({"node": node, "max_tokens": limit,
                           "messages": [{"role": _ROLE[m.type], "content": str(m.content)} for m in messages],
                           "reply": result.generations[0].message.content})
        return result


_ROLE = {"system": "system", "human": "user", "ai": "assistant"}


def pick_calls(calls: list[dict], graph: str, per_node: int) -> list[dict]:
    """At most ``per_node`` calls of each graph node, in the order they were made, labelled ``graph/node``."""
    seen: dict[str, int] = {}
    picked = []
    for call in calls:
        role = f"{graph}/{call['node']}"
        if seen.get(role, 0) < per_node:
            seen[role] = seen.get(role, 0) + 1
            picked.append({**call, "role": role})
    return picked


def record_calls(graphs: list[str], problems: list[dict], context, per_node: int = 2,
                 on_problem: Callable[[str, str], None] | None = None) -> list[dict]:
    """Real role calls: each graph solves each problem with the context's model; at most ``per_node`` calls of
    each of its nodes are kept (with the model's reply, for reference)."""
    from codeforest.api import solve
    from codeforest.tools.models import get_chat_model

    kept = []
    for graph in graphs:
        recorder = RecordingChatModel(inner=get_chat_model(context))
        for problem in problems:
            solve(problem, graph, context=context, model=recorder)
            if on_problem:
                on_problem(graph, problem["id"])
        kept += pick_calls(recorder.calls, graph, per_node)
    return kept


def replay(base_url: str, calls: list[dict], on_call: Callable[[int], None] | None = None,
           slots: int = 1) -> list[dict]:
    """Each call once, greedy, with llama.cpp's timings: the reply and its prompt and decode speed; ``slots``
    calls at a time (as ``bench --concurrency`` sends them), the rows in the calls' order."""
    def one(client: httpx.Client, i: int, call: dict) -> dict:
        started = time.perf_counter()
        body = {"messages": call["messages"], "temperature": 0, "seed": 0, "max_tokens": call.get("max_tokens") or 2048}
        reply = client.post(f"{base_url}/v1/chat/completions", json=body).raise_for_status().json()
        timings = reply.get("timings", {})
        if on_call:
            on_call(i)
        return {"role": call["role"], "text": reply["choices"][0]["message"]["content"],
                "prompt_n": timings.get("prompt_n", 0), "prompt_ms": timings.get("prompt_ms", 0.0),
                "decode_n": timings.get("predicted_n", 0), "decode_ms": timings.get("predicted_ms", 0.0),
                "wall_s": time.perf_counter() - started}

    with httpx.Client(timeout=3600) as client, ThreadPoolExecutor(slots) as pool:
        return list(pool.map(lambda item: one(client, *item), enumerate(calls)))


def worker(gguf: str, setting: str, calls_path: str, slots: int = 1) -> dict:
    """One setting in this process: start a server with ``slots`` slots of 8192 tokens each, replay every call,
    report with this process's peak RSS."""
    from codeforest.tools.models import EmbeddedServer

    calls = read_calls(calls_path)
    server = EmbeddedServer(Path(gguf), n_ctx=8192 * slots, slots=slots, tuning=SETTINGS[setting]).start()
    try:
        started = time.perf_counter()
        rows = replay(server.base_url, calls, slots=slots)
        wall = time.perf_counter() - started
    finally:
        server.stop()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"setting": setting, "wall_s": round(wall, 2), "peak_rss_mb": round(peak_mb), "calls": rows}


def read_calls(path: str | Path) -> list[dict]:
    """The recorded calls of a JSONL file."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def run_setting(gguf: Path, setting: str, calls_path: Path, slots: int = 1) -> dict:
    """``worker`` in a fresh Python process (its own server, its own peak RSS)."""
    proc = subprocess.run([sys.executable, "-m", "codeforest.model_bench", str(gguf), setting, str(calls_path),
                           str(slots)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ModelError(f"bench-model setting {setting!r} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summarize(run: dict, reference: list[dict]) -> dict:
    """One setting's line: speeds per role and overall, wall time, peak RSS, replies unlike the reference."""
    per_role: dict[str, dict] = {}
    for row in run["calls"]:
        agg = per_role.setdefault(row["role"], {"prompt_n": 0, "prompt_ms": 0.0, "decode_n": 0, "decode_ms": 0.0})
        for key in agg:
            agg[key] += row[key]
    speeds = {role: {"prompt_tps": _rate(a["prompt_n"], a["prompt_ms"]), "decode_tps": _rate(a["decode_n"],
                                                                                             a["decode_ms"])}
              for role, a in per_role.items()}
    total = {k: sum(a[k] for a in per_role.values()) for k in ("prompt_n", "prompt_ms", "decode_n", "decode_ms")}
    differ = [i for i, (a, b) in enumerate(zip(run["calls"], reference, strict=True)) if a["text"] != b["text"]]
    return {"setting": run["setting"], "wall_s": run["wall_s"], "peak_rss_mb": run["peak_rss_mb"],
            "prompt_tps": _rate(total["prompt_n"], total["prompt_ms"]),
            "decode_tps": _rate(total["decode_n"], total["decode_ms"]), "differ": differ, "roles": speeds}


def _rate(tokens: int, ms: float) -> float:
    return round(tokens / ms * 1000, 1) if ms else 0.0


def bench_model(gguf: Path, calls_path: Path, settings: list[str],
                on_setting: Callable[[dict], None] | None = None, slots: int = 1) -> dict:
    """The baseline twice, then each other setting; every line compared with the baseline's first replay;
    ``slots`` calls at a time on a server with as many slots."""
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        raise ValueError(f"Unknown setting(s) {', '.join(unknown)}; choose from {', '.join(SETTINGS)}")
    first = run_setting(gguf, BASELINE, calls_path, slots)
    lines = [summarize(first, first["calls"])]
    order = [BASELINE] + [s for s in settings if s != BASELINE]
    for setting in order:
        line = summarize(run_setting(gguf, setting, calls_path, slots), first["calls"])
        if setting == BASELINE:
            line["setting"] = "baseline (again)"
        lines.append(line)
        if on_setting:
            on_setting(line)
    noise = len(lines[1]["differ"])
    for line in lines:
        line["output_preserving"] = len(line["differ"]) <= noise
    return {"calls": len(first["calls"]), "slots": slots, "baseline_self_mismatch": noise, "lines": lines}


def markdown(report: dict) -> str:
    """The report as a Markdown table (speed-up against the baseline's wall time)."""
    base = report["lines"][0]["wall_s"]
    rows = ["| setting | wall s | speed-up | prompt tok/s | decode tok/s | peak RSS MB | replies differing | "
            "output-preserving |", "|---|---|---|---|---|---|---|---|"]
    for line in report["lines"]:
        rows.append(f"| {line['setting']} | {line['wall_s']} | {base / line['wall_s']:.2f}x | {line['prompt_tps']} | "
                    f"{line['decode_tps']} | {line['peak_rss_mb']} | {len(line['differ'])} of {report['calls']} | "
                    f"{'yes' if line['output_preserving'] else 'no'} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # the worker of one setting: python -m codeforest.model_bench GGUF SETTING CALLS SLOTS
    print(json.dumps(worker(*sys.argv[1:4], int(sys.argv[4]))))
