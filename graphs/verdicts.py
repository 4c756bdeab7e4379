"""A run's verdicts: what a program did on the public tests, kept for the rest of the run that asked for it.

The released CodePRM and RethinkMCTS keep each reply's verdict for the problem (``cached_reward`` in their
``get_reward``) and never run the same program twice; every graph here does the same. A search that writes a program
again (a small model often does) does not wait for its run again, and a program whose verdict depends on time (a run
near its limit) reads the same each time. A run is told apart by its problem: the start node makes that dict afresh
for every run and every node of the run reads the same one, so two runs (two rows of a bench on one problem) never
share a verdict. An entry holds its problem, so the dict's id cannot be reused while the entry is kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")
RUNS_KEPT = 256  # the runs whose verdicts are kept (the oldest used goes first): far more than run at once

_RUNS: OrderedDict[int, tuple[Any, dict]] = OrderedDict()
_LOCK = threading.Lock()


def remembered(problem: Any, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()`` for ``key`` in the run of ``problem`` (that very object): computed the first time, then kept.

    Two branches asking for the same key at once may both compute it; the first result kept is returned to both."""
    with _LOCK:
        run = _RUNS.get(id(problem))
        if run is None or run[0] is not problem:
            run = _RUNS[id(problem)] = (problem, {})
        _RUNS.move_to_end(id(problem))
        while len(_RUNS) > RUNS_KEPT:
            _RUNS.popitem(last=False)
        if key in run[1]:
            return run[1][key]
    value = compute()
    with _LOCK:
        return run[1].setdefault(key, value)
