"""``codeforest bench-startup``: how long the command line takes to answer ``--help`` and to refuse a bad flag."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _command_names() -> list[str]:
    from codeforest.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # argparse keeps its subparsers here
    return list(sub.choices)


def _seconds(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "codeforest.cli", *argv], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def bench_startup(repeat: int = 5) -> dict:
    """Median wall seconds of ``codeforest --help``, of every ``CMD --help`` and of a bad flag: warm (Python's
    bytecode cache in place, as after a first run) and cold (an empty bytecode cache, as a first run after an
    install: every module compiled)."""
    warm_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    refused = ["solve", "--dataset", "humaneval", "--no-such-flag"]
    cases = [["--help"], *[[name, "--help"] for name in _command_names()], refused]
    rows = []
    for argv in cases:
        _seconds(argv, warm_env)  # fills the bytecode cache and the page cache
        warm = statistics.median(_seconds(argv, warm_env) for _ in range(repeat))
        cold_runs = []
        for _ in range(repeat):
            folder = tempfile.mkdtemp(prefix="codeforest-pycache-")
            try:
                cold_runs.append(_seconds(argv, {**warm_env, "PYTHONPYCACHEPREFIX": folder}))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        rows.append({"command": " ".join(["codeforest", *argv]), "warm_s": round(warm, 3),
                     "cold_s": round(statistics.median(cold_runs), 3)})
    return {"repeat": repeat, "rows": rows}
