"""What every method's conformance scripts share: writing a prompts folder, and for the replays their options, the
recorder loop over the problems, the calls part of each problem's comparison (calls matched, the first divergence),
the Markdown divergence sections and the result files. The scripts put this folder on their path (``sys.path``)
to import it."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

from codeforest.agents.base import assemble_program
from codeforest.jsonl import rewrite_records
from codeforest.prompts import check_prompts_dir
from codeforest.recorder import Recorder, nearest, prompt_text


def write_prompts(files: dict[str, dict], out: Path) -> Path:
    """Write prompt files (name -> its YAML content) into ``out`` and load them back (a broken one fails here)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (out / f"{name}.yaml").write_text(yaml.safe_dump(content, allow_unicode=True, sort_keys=False, width=10**6),
                                          encoding="utf-8")
    check_prompts_dir(out)
    return out


def prompts_command(usage: str, write: Callable[[Path, Path], Path]) -> None:
    """``released_prompts.py CHECKOUT OUT_DIR``: write the folder and print where."""
    if len(sys.argv) != 3:
        raise SystemExit(usage)
    print(write(Path(sys.argv[1]), Path(sys.argv[2])))


def divergence_sections(rows: list[dict], note: Callable[[dict], str] | None = None) -> list[str]:
    """One Markdown section per problem that diverged: its role, the call, an optional note, and the diff."""
    lines: list[str] = []
    for r in rows:
        if r.get("diff"):
            lines += ["", f"### {r['problem']}: {r['first_divergence']}, call {r['call']}", ""]
            lines += [note(r), ""] if note else []
            lines += ["```diff", r["diff"], "```"]
    return lines


def replay_parser(doc: str, name: str, here: Path) -> argparse.ArgumentParser:
    """The options every replay takes (a driver adds its own): CHECKOUT, the call log and finals (default
    ``NAME.calls.jsonl`` and ``NAME.finals.jsonl`` beside the driver), the problems, a delay per reply, and where
    the results go (``NAME.SUFFIX.jsonl`` and ``.md`` in ``--out-dir``)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("checkout")
    parser.add_argument("--log", help=f"default: {name}.calls.jsonl beside this script")
    parser.add_argument("--finals", help=f"default: {name}.finals.jsonl beside this script")
    parser.add_argument("--ids", help="default: every problem of the log, in the dev sample's order")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply (speed.sh: 1)")
    parser.add_argument("--out-dir", default=str(here), help="where the results go (default: beside this script)")
    parser.add_argument("--out-suffix", default="replay", help=f"results go to {name}.SUFFIX.jsonl and .md")
    return parser


def logged_tasks(every: list, ids: str | None, holds: Callable) -> list:
    """The problems to replay: ``ids`` (comma-separated), else those the log ``holds``, in the dev sample's order
    (the order the released run took them)."""
    from codeforest.bench import select_tasks

    if ids:
        return select_tasks(every, problems=ids.split(","))
    return [t for t in select_tasks(every, sample=20, seed=5) if holds(t)]


def replayed(log: Path, tasks: list, run: Callable, *, delay: float = 0.0) -> Iterator[tuple]:
    """Each task run against a recorder replaying ``log``: ``(task, output, asked)``, ``asked`` being the
    requests of this task's run with whether the log answered each. ``run(task, base_url, folder)`` runs the graph
    (``folder``: a scratch folder for the run); an error ends that task's run, as a result (``stop_reason``)."""
    os.environ.setdefault("CONFORMANCE_KEY", "replayed")
    with tempfile.TemporaryDirectory() as folder, \
            Recorder(log, misses=Path(folder) / "misses.jsonl", delay=delay) as recorder:
        for task in tasks:
            start = len(recorder.trace)
            try:
                output = run(task, recorder.url, Path(folder))
            except Exception as exc:  # noqa: BLE001 - a replay that ends in an error is a result too
                output = {"stop_reason": f"error: {exc}"}
            yield task, output, recorder.trace[start:]


def calls_row(problem: str, recorded: list[str], asked: list[tuple[str, bool]], role: Callable[[str], str], *,
              whole: bool) -> dict:
    """The calls part of a problem's comparison: the calls codeforest asked that the log answered (each prompt as
    often, in any order) of the released run's, the roles of those, and the first divergence: the first request
    the log could not answer (its role, the call's number, a diff against the nearest recorded request of its role),
    else, when the released run finished (``whole``) and codeforest asked fewer, the first recorded call it left
    out. A recording still in progress that codeforest matched whole has no divergence yet."""
    hits = [k for k, hit in asked if hit]
    missed = next((k for k, hit in asked if not hit), None)
    row = {"problem": problem, "recorded_calls": len(recorded), "codeforest_calls": len(asked),
           "matched": sum((Counter(hits) & Counter(recorded)).values()),
           "roles": dict(Counter(role(k) for k in recorded)), "recorded_whole": whole}
    if missed and not whole and row["matched"] == len(recorded):
        missed = None  # codeforest asked beyond what the recording has reached so far
    if missed:
        near, diff = nearest(missed, [k for k in recorded if role(k) == role(missed)] or recorded)
        if near is not None and not diff.strip():  # the texts differ in line ends only: every line's repr
            diff = "\n".join(difflib.unified_diff(_reprs(near), _reprs(missed), "recorded", "asked", lineterm=""))
        unasked = _first_unasked(recorded, hits)
        return row | {"first_divergence": role(missed), "call": len(hits) + 1, "diff": diff,
                      "released_next": role(unasked[1] if unasked else missed)}
    unasked = _first_unasked(recorded, hits) if whole else None
    if unasked is not None:
        number, key = unasked
        row |= {"first_divergence": f"{role(key)} not asked", "call": number,
                "diff": "\n".join(f"- {line}" for line in prompt_text(key).splitlines())}
    return row


def _first_unasked(recorded: list[str], hits: list[str]) -> tuple[int, str] | None:
    """The first recorded request (its number in the released order, and it) that codeforest's answered requests do
    not account for."""
    left = Counter(hits)
    for number, key in enumerate(recorded, 1):
        if left[key]:
            left[key] -= 1
        else:
            return number, key
    return None


def _reprs(key: str) -> list[str]:
    return [repr(line) for line in prompt_text(key).splitlines(keepends=True)]


def same_program(problem: dict, mine: str | None, released: str | None) -> bool:
    """Whether codeforest's final program is the released one: the same text, or the same once the prompt's import
    lines that codeforest adds to a function's program are added to the released one too."""
    if released is None:
        return False
    mine, released = (mine or "").strip(), released.strip()
    return mine == released or mine == assemble_program(problem, released).strip()


def first_cell(row: dict) -> str:
    """The table's "first divergence" cell."""
    if row.get("first_divergence"):
        return f"{row['first_divergence']} (call {row['call']})"
    return "none" if row["recorded_whole"] else "none so far (recording in progress)"


def stable_error(row: dict) -> dict:
    """The row with its error text free of what changes from one replay to the next: the replaying recorder's port
    and the scratch folder of its misses file."""
    if not row.get("error"):
        return row
    error = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", row["error"])
    return row | {"error": re.sub(r" \(see [^)]*misses\.jsonl\)", "", error)}


def write_results(out_dir: str | Path, name: str, rows: list[dict], table: str, log: Path) -> None:
    """``NAME.jsonl`` (one row per problem) and ``NAME.md`` (the table) in ``out_dir``, never over the call log."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if (out / f"{name}.jsonl").resolve() == log.resolve():
        raise SystemExit(f"the results would overwrite the call log {log}: choose another --out-suffix")
    rewrite_records(out / f"{name}.jsonl", [stable_error(r) for r in rows])
    (out / f"{name}.md").write_text(table, encoding="utf-8")
