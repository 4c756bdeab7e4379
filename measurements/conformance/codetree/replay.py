"""Replay the released CodeTree's recorded calls into codeforest's CodeTree graph and compare, problem by problem.

    python measurements/conformance/codetree/replay.py CHECKOUT [--dataset humaneval|apps] [--ids ...]

codeforest runs with the released code's settings (its prompts, read from CHECKOUT by released_prompts.py; its
test feedback; no pass fraction for a failing stdin program; 1 s per test; its final program when nothing is
accepted; no JSON-schema decoding) against
``codeforest recorder`` replaying the log. For each problem: the calls codeforest made that the log answered, of
the calls the released code made (compared per request: each prompt asked as often, in any order); the first request
the log could not answer (its role and a diff against the nearest recorded request of that problem); whether the
final programs and the trees' shapes are the same.
Results go to ``DATASET.replay.jsonl`` and ``DATASET.replay.md`` beside this script (``--out-suffix``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from collections import Counter
from pathlib import Path

from released_prompts import write as write_prompts  # beside this script (it puts replaykit on the path)
from replaykit import divergence_sections

from codeforest.api import solve
from codeforest.bench import select_tasks
from codeforest.jsonl import read_records
from codeforest.loading import load_dataset
from codeforest.recorder import Recorder, nearest, replay_key

HERE = Path(__file__).parent
DATASETS = {"humaneval": "humaneval164", "apps": "apps_stdio150"}  # the released files, as codeforest loads them
RELEASED = {"structured_output": False, "codetree_feedback": "released", "codetree_final": "last_failing",
            "codetree_partial_credit": False, "codetree_parse": "released",
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
    (``agent_guide``): a strategy or reflection list pushes its items on a stack (the first on top), a program call
    pops the top, and an item deeper than ``max_depth`` is skipped without a call."""
    stack: list[int] = []
    depths: list[int] = []
    current = 0
    for key, reply in zip(keys, replies, strict=True):
        kind = role(key)
        if kind.startswith("Thinker"):
            items = released_items(reply)
            depth = 1 if kind == "Thinker (strategies)" else current + 1
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
    hits = [k for k, hit in asked if hit]
    missed = next((k for k, hit in asked if not hit), None)
    row = {"problem": task.id, "recorded_calls": len(keys), "codeforest_calls": len(asked),
           "matched": sum((Counter(hits) & Counter(keys)).values()),
           "roles": dict(Counter(role(k) for k in keys)), "stop_reason": output.get("stop_reason"),
           "wall_s": (output.get("cost") or {}).get("wall_s")}
    row["recorded_whole"] = released_final is not None  # the released run finished this problem
    if missed and not row["recorded_whole"] and row["matched"] == len(keys):
        missed = None  # codeforest asked beyond what the recording has reached so far: no divergence yet
    if missed:
        near, diff = nearest(missed, keys)
        row |= {"first_divergence": role(missed), "call": len(hits) + 1, "diff": diff}
    final = (output.get("final_code") or "").strip()
    row["same_final_program"] = released_final is not None and final == released_final.strip()
    released_shape = released_depths(keys, [reply for _, reply in recorded])
    row["released_shape"], row["codeforest_shape"] = released_shape, output.get("generated_depths", [])
    row["same_shape"] = released_shape == row["codeforest_shape"]
    return row


def markdown(rows: list[dict]) -> str:
    """The per-problem table and each first divergence's diff."""
    lines = ["| problem | calls matched / released | codeforest calls | first divergence | same final program | "
             "same tree shape |", "|---|---|---|---|---|---|"]
    for r in rows:
        first = f"{r['first_divergence']} (call {r['call']})" if r.get("first_divergence") else \
            "none" if r["recorded_whole"] else "none so far (recording in progress)"
        lines.append(f"| {r['problem']} | {r['matched']} / {r['recorded_calls']} | {r['codeforest_calls']} | {first} | "
                     f"{'yes' if r['same_final_program'] else 'no' if r['recorded_whole'] else '-'} | "
                     f"{'yes' if r['same_shape'] else 'no'} "
                     f"({r['released_shape']} vs {r['codeforest_shape']}) |")
    lines += divergence_sections(rows)
    return "\n".join(lines) + "\n"


def main() -> None:
    """Replay, compare, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout")
    parser.add_argument("--dataset", choices=DATASETS, default="humaneval")
    parser.add_argument("--log", help="default: DATASET.calls.jsonl beside this script")
    parser.add_argument("--finals", help="default: DATASET.finals.jsonl beside this script")
    parser.add_argument("--ids", help="default: every problem of the log, in the dev sample's order")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply (speed.sh: 1)")
    parser.add_argument("--out-suffix", default="replay", help="results go to DATASET.SUFFIX.jsonl and .md")
    args = parser.parse_args()
    log = Path(args.log or HERE / f"{args.dataset}.calls.jsonl")
    finals_file = Path(args.finals or HERE / f"{args.dataset}.finals.jsonl")
    os.environ.setdefault("CONFORMANCE_KEY", "replayed")
    records = read_records(log)[0]
    finals: list[tuple[str, str]] = []  # a function's is scored twice (base and weaker tests): one per problem
    for final in read_records(finals_file)[0] if finals_file.is_file() else []:
        if not final["entry_point"] or not finals or finals[-1] != (final["entry_point"], final["program"]):
            finals.append((final["entry_point"], final["program"]))
    tasks = load_dataset(DATASETS[args.dataset])
    if args.ids:
        tasks = select_tasks(tasks, problems=args.ids.split(","))
    else:  # the problems the log holds, in the dev sample's order (the order the released run took them)
        asked = [json.loads(replay_key(r["request"])) for r in records]
        tasks = [t for t in select_tasks(tasks, sample=20, seed=5)
                 if any(belongs(json.dumps(a), t.problem) for a in asked)]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        prompts = write_prompts(Path(args.checkout), Path(folder) / "prompts")
        misses = Path(folder) / "misses.jsonl"
        with Recorder(log, misses=misses, delay=args.delay) as recorder:
            for number, task in enumerate(tasks):
                recorded = [(replay_key(r["request"]), r["response"]["choices"][0]["message"]["content"])
                            for r in records if belongs(replay_key(r["request"]), task.problem)]
                start = len(recorder.trace)
                settings = {**RELEASED, "base_url": recorder.url, "prompts_dir": str(prompts)}
                generated: list[int] = []  # the depth of each program, as the graph writes them

                def on_event(event: dict, generated=generated) -> None:
                    if event.get("event") == "generated":
                        generated.append(event["depth"])

                try:
                    output = solve(task.problem, "codetree", context=settings, on_event=on_event)
                except Exception as exc:  # noqa: BLE001 - a replay that ends in an error is a result too
                    output = {"stop_reason": f"error: {exc}"}
                output["generated_depths"] = generated
                final = finals[number][1] if number < len(finals) else None
                row = compare(task, recorded, recorder.trace[start:], output, final)
                rows.append(row | {"delay_s": args.delay})
                print(f"{task.id}: {row['matched']}/{row['recorded_calls']} matched, first divergence: "
                      f"{row.get('first_divergence', 'none')}", flush=True)
    name = f"{args.dataset}.{args.out_suffix}"
    (HERE / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (HERE / f"{name}.md").write_text(markdown(rows), encoding="utf-8")


if __name__ == "__main__":
    main()
