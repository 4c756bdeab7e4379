"""Replay the released CodeTree's recorded calls into codeforest's CodeTree graph and compare, problem by problem.

    python measurements/conformance/codetree/replay.py CHECKOUT [--dataset humaneval|apps] [--ids ...]

codeforest runs with the released code's settings (its prompts, read from CHECKOUT by released_prompts.py; its
test feedback; no pass fraction for a failing stdin program; 1 s per test; its final program when nothing is
accepted; no JSON-schema decoding) against
``codeforest recorder`` replaying the log. For each problem: the calls codeforest made that the log answered, of
the calls the released code made (compared per request: each prompt asked as often, in any order); the first request
the log could not answer (its role and a diff against the nearest recorded request of that problem); whether the
final programs and the trees' shapes are the same.
Results go to ``DATASET.SUFFIX.jsonl`` and ``DATASET.SUFFIX.md`` in ``--out-dir`` (default: beside this script).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from released_prompts import write as write_prompts  # beside this script (it puts replaykit on the path)
from replaykit import (
    calls_row,
    divergence_sections,
    first_cell,
    logged_tasks,
    replay_parser,
    replayed,
    same_program,
    write_results,
)

from codeforest.api import solve
from codeforest.jsonl import read_records
from codeforest.loading import load_dataset
from codeforest.recorder import replay_key

HERE = Path(__file__).parent
DATASETS = {"humaneval": "humaneval164", "apps": "apps_stdio150"}  # the released files, as codeforest loads them
RELEASED = {"structured_output": False, "codetree_feedback": "released", "codetree_final": "last_failing",
            "codetree_partial_credit": False, "codetree_parse": "released", "codetree_code_shown": "written",
            "test_timeout": 1.0, "model": "gpt-4o-mini", "api_key_env": "CONFORMANCE_KEY"}
ROLES = {"provides strategy": "Thinker (strategies)", "reflect on problem-solving": "Thinker (reflections)",
         "only responds with python code": "Solver", "past function implementation": "Debugger",
         "past solution to a problem": "Debugger", "evaluate the execution outputs": "Critic (score)",
         "further review the solution": "Critic (verdict)"}


def role(key: str) -> str:
    """The role that asked a request, read from its system message."""
    system = json.loads(key)["messages"][0]["content"]
    return next((name for marker, name in ROLES.items() if marker in system), "unknown")


def belongs(key: str, problem: dict) -> bool:
    """Whether a request is about this problem: its entry point is defined, or (standard input) its first line is
    shown."""
    mark = f"def {problem['entry_point']}(" if problem.get("entry_point") else problem["prompt"].strip().splitlines()[0]
    return any(mark in m["content"] for m in json.loads(key)["messages"])


def released_depths(keys: list[str], replies: list[str], max_depth: int = 3) -> list[int]:
    """The depth of each program the released run wrote, in order, read from its calls by its own search rule
    (``agent_guide``): a strategy or reflection list pushes its items on a stack (the first on top; an empty
    reflection makes no node), a program call pops the top, and an item deeper than ``max_depth`` is skipped without
    a call."""
    stack: list[int] = []
    depths: list[int] = []
    current = 0
    for key, reply in zip(keys, replies, strict=True):
        kind = role(key)
        if kind.startswith("Thinker"):
            strategies = kind == "Thinker (strategies)"
            items = [item for item in released_items(reply) if item or strategies]
            depth = 1 if strategies else current + 1
            stack += [depth] * len(items)
        elif kind in ("Solver", "Debugger"):
            while stack and stack[-1] > max_depth:
                stack.pop()
            current = stack.pop() if stack else 0
            depths.append(current)
    return depths


def released_items(reply: str, width: int = 10) -> list[str]:
    """The released parse of a numbered list (generators/py_generate.py ``parse_strategy``): the text after the first
    "N." of each line of 5 characters or more, at most ``width``; empty items count for strategies only."""
    items = []
    for line in (line for line in reply.splitlines() if line.strip()):
        if len(line) < 5:
            continue
        found = re.search(r"^\s*<\d+>(.*)", line.strip()) or re.search(r"\d+\.(.*)", line.strip())
        if found:
            items.append(found.group(1))
    return items[:width]


def compare(task, recorded: list[tuple[str, str]], asked: list[tuple[str, bool]], output: dict,
            released_final: str | None) -> dict:
    """One problem's comparison."""
    keys = [k for k, _ in recorded]
    row = calls_row(task.id, keys, asked, role, whole=released_final is not None)
    row |= {"stop_reason": output.get("stop_reason"), "wall_s": (output.get("cost") or {}).get("wall_s")}
    row["same_final_program"] = same_program(task.problem, output.get("final_code"), released_final)
    released_shape = released_depths(keys, [reply for _, reply in recorded])
    row["released_shape"], row["codeforest_shape"] = released_shape, output.get("generated_depths", [])
    row["same_shape"] = released_shape == row["codeforest_shape"]
    return row


def markdown(rows: list[dict]) -> str:
    """The per-problem table and each first divergence's diff."""
    lines = ["| problem | calls matched / released | codeforest calls | first divergence | same final program | "
             "same tree shape |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['problem']} | {r['matched']} / {r['recorded_calls']} | {r['codeforest_calls']} | "
                     f"{first_cell(r)} | "
                     f"{'yes' if r['same_final_program'] else 'no' if r['recorded_whole'] else '-'} | "
                     f"{'yes' if r['same_shape'] else 'no'} "
                     f"({r['released_shape']} vs {r['codeforest_shape']}) |")
    lines += divergence_sections(rows)
    return "\n".join(lines) + "\n"


def main() -> None:
    """Replay, compare, write the results."""
    parser = replay_parser(__doc__, "DATASET", HERE)
    parser.add_argument("--dataset", choices=DATASETS, default="humaneval")
    args = parser.parse_args()
    log = Path(args.log or HERE / f"{args.dataset}.calls.jsonl")
    finals_file = Path(args.finals or HERE / f"{args.dataset}.finals.jsonl")
    records = read_records(log)[0]
    logged = [(replay_key(r["request"]), r["response"]["choices"][0]["message"]["content"]) for r in records]
    programs: list[str] = []  # a function's is scored twice (base and weaker tests): one per problem
    run_ids: list[str] = []  # the recording run's problems, in the order it took them
    last = None
    for final in read_records(finals_file)[0] if finals_file.is_file() else []:
        if not final["entry_point"] or last != (final["entry_point"], final["program"]):
            programs.append(final["program"])
        last, run_ids = (final["entry_point"], final["program"]), final["ids"].split(",")
    finals = dict(zip(run_ids, programs, strict=False))  # a run cut short scored fewer
    tasks = logged_tasks(load_dataset(DATASETS[args.dataset]), args.ids,
                         lambda t: any(belongs(k, t.problem) for k, _ in logged))
    with tempfile.TemporaryDirectory() as folder:
        prompts = write_prompts(Path(args.checkout), Path(folder) / "prompts")
        depths: dict[str, list[int]] = {}
        # the released executor's program file, as its run names it (run_released.py fixes the process id)
        pid = os.environ.get("CONFORMANCE_PID", "4715")
        released_file = f"{Path(args.checkout).resolve()}/temp_files/temp_test{pid}.py"

        def run(task, url: str, _folder: Path) -> dict:
            generated = depths.setdefault(task.id, [])  # the depth of each program, as the graph writes them

            def on_event(event: dict) -> None:
                if event.get("event") == "generated":
                    generated.append(event["depth"])

            settings = {**RELEASED, "base_url": url, "prompts_dir": str(prompts),
                        "codetree_released_file": released_file}
            return solve(task.problem, "codetree", context=settings, on_event=on_event)

        rows = []
        for task, output, asked in replayed(log, tasks, run, delay=args.delay):
            recorded = [(k, reply) for k, reply in logged if belongs(k, task.problem)]
            row = compare(task, recorded, asked, {**output, "generated_depths": depths.get(task.id, [])},
                          finals.get(task.id))
            rows.append(row | {"delay_s": args.delay})
            print(f"{task.id}: {row['matched']}/{row['recorded_calls']} matched, first divergence: "
                  f"{row.get('first_divergence', 'none')}", flush=True)
    write_results(args.out_dir, f"{args.dataset}.{args.out_suffix}", rows, markdown(rows), log)


if __name__ == "__main__":
    main()
