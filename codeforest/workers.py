"""Whole problems on worker threads, which Ctrl-C stops at once."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager


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
