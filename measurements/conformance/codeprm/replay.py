"""Replay the released CodePRM's recorded GVR-MCTS calls into codeforest's gvr graph and compare, problem by problem.

    python measurements/conformance/codeprm/replay.py CHECKOUT [--log L] [--finals F] [--ids ...] [--out-dir D]

codeforest runs with the released run's settings (``RELEASED`` below: run.py's defaults and the README's 16
rollouts) and its wording (a prompts folder ``released_prompts.py`` writes from CHECKOUT), against ``codeforest
recorder`` replaying the log. For each problem: the calls codeforest made that the log answered, of the calls the
released code made (each prompt asked as often, in any order); the first request the log could not answer (its role,
and a diff against the nearest recorded request of that problem); whether the final programs are the same; whether
the searches selected the same paths (the released ``selection_i: root->0->2`` lines, children numbered in the
order they were made); and whether the distinct programs got the same values, in the order they were first written
(the released ``train rewards``). Results go to ``apps.SUFFIX.jsonl`` and ``apps.SUFFIX.md`` in ``--out-dir``
(default: beside this script).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import Counter
from pathlib import Path

from released_prompts import write as write_prompts  # beside this script (it puts replaykit on the path)
from replaykit import divergence_sections

from codeforest.api import run_config
from codeforest.bench import select_tasks
from codeforest.graphs import search
from codeforest.jsonl import read_records
from codeforest.loading import load_dataset
from codeforest.recorder import Recorder, nearest, replay_key
from codeforest.registry import context_for, graph_module

HERE = Path(__file__).parent
DATASET = "apps_interview150"  # the rows record.sh gives the released code, as they are
# run.py's defaults with the README's GVR command (-m CodePRMMCTS -eid 2 --rollout 16): width 3, var_p_uct with
# c_base 10 and c 4, Q = the best return, discount 0.9 (CodePRMMCTS.gamma), max_think_times 2 (one
# locate-and-refine per rollout), --reward_mode pub_test, --verify_pos_mode llm (the chat model names the flawed
# thought), the other verifier rules as released where they would apply (threshold 0.5 with <, the lowest when none
# is flagged, random scores for an unreadable reply), temperature 0 and max_tokens 1024 on every call, 10 s per
# test (HumanevalExecutor), plain text answers.
RELEASED = {"model": "gpt-4o-mini", "api_key_env": "CONFORMANCE_KEY", "structured_output": False,
            "max_tokens": 1024, "temperature": 0.0, "gvr_rollouts": 16, "gvr_width": 3, "gvr_c_base": 10.0,
            "gvr_c": 4.0, "gvr_gamma": 0.9, "gvr_max_refines": 1, "gvr_verify": "llm_locate",
            "gvr_reward": "pub_test", "gvr_prm_agg": "max", "verifier": "llm", "verifier_input": "execution",
            "verifier_threshold": 0.5, "verifier_threshold_rule": "lt", "verifier_unflagged": "lowest",
            "verifier_unread": "random", "verifier_example": "released", "test_timeout": 10.0,
            "released_text": True, "code_shown": "reply", "gvr_error_text": "released", "gvr_fallback": "one_request"}
ROLES = [(("possible thoughts", "doesn't pass some test cases"), "Thinker (expand with feedback)"),
         (("possible thoughts",), "Thinker (expand)"),
         (("provide a new thought",), "Thinker (fallback: one thought, n=width)"),
         (("Complete the Python program",), "Solver"),
         (("find which thought is flawed",), "Locator (llm)"),
         (("Revise and enhance the",), "Refine"),
         (("judge the correctness of each thought",), "Verifier (llm_score_thought)"),
         (("evaluates the code is suitable",), "Evaluator (pub_llm)")]


def role(key: str) -> str:
    """The role that asked a request, read from its messages (markers tried in order)."""
    text = "\n".join(m["content"] for m in json.loads(key)["messages"])
    return next((name for markers, name in ROLES if all(m in text for m in markers)), "unknown")


def belongs(key: str, problem: dict) -> bool:
    """Whether a request shows this problem (which defines its entry point)."""
    return any(f"def {problem['entry_point']}(" in m["content"] for m in json.loads(key)["messages"])


def released_path(nodes: dict, path: list[str]) -> str:
    """A codeforest path as the released code prints it: ``root->i->j``, each the child's place among its
    siblings in the order they were made (the released ``chance_id``)."""
    places = []
    for parent, child in zip(path, path[1:], strict=False):
        places.append(str([k["id"] for k in search.children(nodes, parent)].index(child)))
    return "->".join(["root", *places])


def program_values(programs: list[dict]) -> list[float]:
    """The value of each distinct program, in the order first written (the released ``cached_value``)."""
    seen: dict[str, float] = {}
    for program in programs:
        seen.setdefault(program["code"], program["value"])
    return [round(v, 6) for v in seen.values()]


def run_gvr(problem: dict, settings: dict) -> tuple[dict, list[list[str]]]:
    """codeforest's gvr graph on one problem, as ``codeforest.api.solve`` runs it: its final state (which, unlike
    solve's output, holds every program with its value) and the path of each selection."""
    context = context_for("gvr", settings)
    final: dict = {}
    selected: list[list[str]] = []
    try:
        for mode, chunk in graph_module("gvr").graph.stream({"problem": problem}, run_config("gvr", context),
                                                             context=context, stream_mode=["custom", "values"]):
            if mode == "values":
                final = chunk
            elif chunk.get("event") == "selected":
                selected.append(list(chunk["path"]))
    except Exception as exc:  # noqa: BLE001 - a replay that ends in an error is a result too
        final = {**final, "stop_reason": f"error: {exc}"}
    return final, selected


def compare(task, recorded: list[str], asked: list[tuple[str, bool]], output: dict, selected: list[list[str]],
            final: dict | None) -> dict:
    """One problem's comparison."""
    hits = [k for k, hit in asked if hit]
    missed = next((k for k, hit in asked if not hit), None)
    row = {"problem": task.id, "recorded_calls": len(recorded), "codeforest_calls": len(asked),
           "matched": sum((Counter(hits) & Counter(recorded)).values()),
           "roles": dict(Counter(role(k) for k in recorded)), "stop_reason": output.get("stop_reason"),
           "error": output.get("error"),
           "recorded_whole": final is not None}
    if missed and not row["recorded_whole"] and row["matched"] == len(recorded):
        missed = None  # codeforest asked beyond what the recording has reached so far: no divergence yet
    if missed:
        _, diff = nearest(missed, recorded)
        row |= {"first_divergence": role(missed), "call": len(hits) + 1, "diff": diff}
    code = (output.get("final_code") or "").strip()
    row["same_final_program"] = final is not None and code == (final.get("program") or "").strip()
    nodes = output.get("nodes") or {}
    row["released_selections"] = (final or {}).get("selections", [])
    row["codeforest_selections"] = [released_path(nodes, p) for p in selected] if nodes else []
    row["same_selections"] = row["released_selections"] == row["codeforest_selections"]
    row["released_values"] = [round(v, 6) for v in (final or {}).get("train_rewards", [])]
    row["codeforest_values"] = program_values(output.get("programs") or [])
    row["same_values"] = row["released_values"] == row["codeforest_values"]
    return row


def markdown(rows: list[dict]) -> str:
    """The per-problem table and each first divergence's diff."""
    lines = ["| problem | calls matched / released | codeforest calls | first divergence | same final program | "
             "same selections | same program values |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        first = f"{r['first_divergence']} (call {r['call']})" if r.get("first_divergence") else \
            "none" if r["recorded_whole"] else "none so far (recording in progress)"
        whole = r["recorded_whole"]
        shown = len(r["released_selections"])
        same = sum(a == b for a, b in zip(r["released_selections"], r["codeforest_selections"], strict=False))
        lines.append(f"| {r['problem']} | {r['matched']} / {r['recorded_calls']} | {r['codeforest_calls']} | {first} | "
                     f"{'yes' if r['same_final_program'] else 'no' if whole else '-'} | "
                     f"{'yes' if r['same_selections'] else 'no'} ({same} of {shown} the same) | "
                     f"{'yes' if r['same_values'] else 'no'} ({r['released_values']} vs {r['codeforest_values']}) |")
    lines += divergence_sections(rows)
    return "\n".join(lines) + "\n"


def main() -> None:
    """Replay, compare, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout")
    parser.add_argument("--log", help="default: apps.calls.jsonl beside this script")
    parser.add_argument("--finals", help="default: apps.finals.jsonl beside this script")
    parser.add_argument("--ids", help="default: every problem of the log, in the dev sample's order")
    parser.add_argument("--rollouts", type=int, default=16, help="as record.sh ran (CODEPRM_ROLLOUTS; default 16)")
    parser.add_argument("--set", action="append", default=[], metavar="SETTING=VALUE",
                        help="a gvr setting other than RELEASED's, for a recording made with other run.py flags "
                             "(CODEPRM_ARGS), e.g. gvr_reward=pub_prm, gvr_verify=threshold")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--out-dir", default=str(HERE), help="where apps.SUFFIX.jsonl and .md go")
    parser.add_argument("--out-suffix", default="replay", help="results go to apps.SUFFIX.jsonl and .md")
    args = parser.parse_args()
    log = Path(args.log or HERE / "apps.calls.jsonl")
    finals_file = Path(args.finals or HERE / "apps.finals.jsonl")
    os.environ.setdefault("CONFORMANCE_KEY", "replayed")
    records = read_records(log)[0]
    finals = {f["task_id"]: f for f in read_records(finals_file)[0]} if finals_file.is_file() else {}
    keys = [replay_key(r["request"]) for r in records]
    every = load_dataset(DATASET)
    if args.ids:
        tasks = select_tasks(every, problems=args.ids.split(","))
    else:  # the problems the log holds, in the dev sample's order (the order the released run took them)
        tasks = [t for t in select_tasks(every, sample=20, seed=5) if any(belongs(k, t.problem) for k in keys)]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        prompts = write_prompts(Path(args.checkout), Path(folder) / "prompts")
        misses = Path(folder) / "misses.jsonl"
        with Recorder(log, misses=misses, delay=args.delay) as recorder:
            for task in tasks:
                recorded = [k for k in keys if belongs(k, task.problem)]
                start = len(recorder.trace)
                settings = {**RELEASED, "gvr_rollouts": args.rollouts, **dict(s.split("=", 1) for s in args.set),
                            "base_url": recorder.url, "prompts_dir": str(prompts)}
                output, selected = run_gvr(task.problem, settings)
                row = compare(task, recorded, recorder.trace[start:], output, selected, finals.get(task.id))
                rows.append(row | {"delay_s": args.delay})
                print(f"{task.id}: {row['matched']}/{row['recorded_calls']} matched, first divergence: "
                      f"{row.get('first_divergence', 'none')}", flush=True)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if (out / f"apps.{args.out_suffix}.jsonl").resolve() == log.resolve():
        raise SystemExit(f"the results would overwrite the call log {log}: choose another --out-suffix")
    (out / f"apps.{args.out_suffix}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (out / f"apps.{args.out_suffix}.md").write_text(markdown(rows), encoding="utf-8")


if __name__ == "__main__":
    main()
