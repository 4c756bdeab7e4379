"""Where a run's time goes: seconds in model calls and in sandbox runs, for whoever is timing.

``timing()`` opens a tally in the current context; model calls and sandbox runs made inside it (in this
thread, or in the graph's node threads, which inherit the context) add their seconds to it. Calls made in
parallel each count in ``model_s`` / ``sandbox_s``; ``busy_s`` is the time at least one of them was under
way, so the block's wall time minus ``busy_s`` is what went elsewhere. While the block runs, ``model_calls``
counts the model calls answered so far, PRM calls included (a live view of a long run). With no tally open,
timing costs nothing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar

MODEL, SANDBOX, BUSY = "model_s", "sandbox_s", "busy_s"
_TALLY: ContextVar[dict | None] = ContextVar("codeforest_time_tally", default=None)
_LOCK = threading.Lock()


def union_length(intervals: list[tuple[float, float]]) -> float:
    """The total length covered by (start, end) intervals, overlaps counted once."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


@contextlib.contextmanager
def timing() -> Iterator[dict]:
    """A tally of the seconds spent in model calls and sandbox runs inside the block (``busy_s`` set at exit)."""
    tally: dict = {MODEL: 0.0, SANDBOX: 0.0, BUSY: 0.0, "_spans": [], "_calls": 0}
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)
        tally[BUSY] = union_length(tally.pop("_spans"))
        tally.pop("_calls")


def model_calls(tally: dict) -> int:
    """The model calls answered so far inside an open ``timing()`` block (a failed attempt is not counted)."""
    return tally.get("_calls", 0)


@contextlib.contextmanager
def timed(kind: str) -> Iterator[None]:
    """Add the block's seconds to the open tally under ``kind`` (``MODEL`` or ``SANDBOX``)."""
    tally = _TALLY.get()
    if tally is None:
        yield
        return
    start = time.perf_counter()
    answered = False
    try:
        yield
        answered = True
    finally:
        end = time.perf_counter()
        with _LOCK:
            tally[kind] += end - start
            tally["_spans"].append((start, end))
            if kind == MODEL and answered:
                tally["_calls"] += 1
