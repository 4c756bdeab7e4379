"""Whole problems on worker threads, which Ctrl-C stops at once, the record of which are running, and the lock
that keeps a second process off the same results."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path

from codeforest.tools import stopwatch


@contextmanager
def problem_pool(workers: int) -> Iterator[ThreadPoolExecutor]:
    """A thread pool for whole problems. When its block raises (Ctrl-C, say), the problems not yet started are
    dropped rather than all run first, as leaving a ``ThreadPoolExecutor`` block does, and the block's exception
    goes on without waiting for the problems in flight (``cli.entry`` exits without them)."""
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def as_finished(futures: Iterable[Future], poll_s: float = 0.2) -> Iterator[Future]:
    """The futures as they finish (``as_completed``), the waiting thread waking every ``poll_s``. Python runs a
    signal's handler (Ctrl-C's ``KeyboardInterrupt``) in the main thread only, when it next runs bytecode: when the
    kernel hands SIGINT to a worker thread, a main thread blocked on a lock until a stalled problem ends would not
    see it for minutes."""
    order = {future: i for i, future in enumerate(futures)}
    pending = set(order)
    while pending:
        done, pending = wait(pending, timeout=poll_s, return_when=FIRST_COMPLETED)
        yield from sorted(done, key=order.__getitem__)  # those done at once in the order given


class InFlight:
    """The problems running now, for the progress display: worker threads add and remove them while it reads."""

    def __init__(self):
        self._running: dict[tuple[str, str], tuple[float, dict]] = {}  # (run, problem) -> (start, time tally)
        self._lock = threading.Lock()

    def start(self, run: str, problem_id: str, clock: dict) -> None:
        """A problem of ``run`` (a graph, say) starts; ``clock`` is its ``stopwatch.timing`` tally."""
        with self._lock:
            self._running[(run, problem_id)] = (time.monotonic(), clock)

    def finish(self, run: str, problem_id: str) -> None:
        """The problem is done (or never started)."""
        with self._lock:
            self._running.pop((run, problem_id), None)

    def in_flight(self, calls: bool = True) -> list[dict]:
        """Each running problem: ``graph`` (its run), ``problem_id``, seconds so far and model calls finished
        (``None`` without ``calls``: a server runs the model, its calls are not seen here)."""
        with self._lock:
            running = list(self._running.items())
        now = time.monotonic()
        return [{"graph": run, "problem_id": problem, "elapsed_s": now - started,
                 "calls": stopwatch.model_calls(clock) if calls else None}
                for (run, problem), (started, clock) in running]


class InUse(RuntimeError):
    """Another process holds the results this one would write."""


@contextmanager
def held(lock_path: Path, in_use: str, instead: str) -> Iterator[None]:
    """An exclusive lock on ``lock_path`` for this process (it holds our pid while held); while another process
    holds it, raise ``InUse``: "<in_use> (pid N); wait for it to finish or stop it, <instead>"."""
    with open(lock_path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "unknown"
            raise InUse(f"{in_use} (pid {holder}); wait for it to finish or stop it, {instead}") from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        try:
            yield
        finally:
            lock.seek(0)
            lock.truncate()
