"""Replay the released CodePRM's recorded GVR-MCTS calls into codeforest's gvr graph and compare, problem by problem.

    python measurements/conformance/codeprm/replay.py CHECKOUT [--log L] [--finals F] [--ids ...] [--out-dir D]

codeforest runs with the released run's settings (``RELEASED`` below: run.py's defaults and the README's 16
rollouts) and its wording (a prompts folder ``released_prompts.py`` writes from CHECKOUT), against ``codeforest
recorder`` replaying the log. For each problem: the calls codeforest made that the log answered, of the calls the
released code made (each prompt asked as often, in any order); the first request the log could not answer (its role,
and a diff against the nearest recorded request of that problem); whether the final programs are the same; whether
the searches selected the same paths (the released ``selection_i: root->0->2`` lines, children numbered in the
order they were made); and whether the distinct replies got the same values, in the order they were first written
(the released ``train rewards``). Results go to ``apps.SUFFIX.jsonl`` and ``apps.SUFFIX.md`` in ``--out-dir``
(default: beside this script).
"""

from __future__ import annotations

import json
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

from codeforest.api import run_config
from codeforest.graphs import search
from codeforest.jsonl import read_records
from codeforest.loading import load_dataset
from codeforest.recorder import replay_key
from codeforest.registry import context_for, graph_module

HERE = Path(__file__).parent
DATASETS = {"apps": "apps_interview150", "humaneval": "humaneval164"}  # the rows record.sh gives the released code
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
    """The value of each distinct reply, in the order first written (the released ``cached_value``, keyed by the
    reply's tokens: two replies around one program are two entries)."""
    seen: dict[str, float] = {}
    for program in programs:
        seen.setdefault(program.get("reply", program["code"]), program["value"])
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
    row = calls_row(task.id, recorded, asked, role, whole=final is not None)
    row |= {"stop_reason": output.get("stop_reason"), "error": output.get("error")}
    row["same_final_program"] = final is not None and same_program(task.problem, output.get("final_code"),
                                                                   final.get("program") or "")
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
        whole = r["recorded_whole"]
        shown = len(r["released_selections"])
        same = sum(a == b for a, b in zip(r["released_selections"], r["codeforest_selections"], strict=False))
        lines.append(f"| {r['problem']} | {r['matched']} / {r['recorded_calls']} | {r['codeforest_calls']} | "
                     f"{first_cell(r)} | {'yes' if r['same_final_program'] else 'no' if whole else '-'} | "
                     f"{'yes' if r['same_selections'] else 'no'} ({same} of {shown} the same) | "
                     f"{'yes' if r['same_values'] else 'no'} ({r['released_values']} vs {r['codeforest_values']}) |")
    lines += divergence_sections(rows)
    return "\n".join(lines) + "\n"


def main() -> None:
    """Replay, compare, write the results."""
    parser = replay_parser(__doc__, "DATASET", HERE)
    parser.add_argument("--dataset", choices=DATASETS, default="apps",
                        help="as record.sh ran (CONFORMANCE_DATASET)")
    parser.add_argument("--rollouts", type=int, default=16, help="as record.sh ran (CODEPRM_ROLLOUTS; default 16)")
    parser.add_argument("--set", action="append", default=[], metavar="SETTING=VALUE",
                        help="a gvr setting other than RELEASED's, for a recording made with other run.py flags "
                             "(CODEPRM_ARGS), e.g. gvr_reward=pub_prm, gvr_verify=threshold")
    args = parser.parse_args()
    log = Path(args.log or HERE / f"{args.dataset}.calls.jsonl")
    finals_file = Path(args.finals or HERE / f"{args.dataset}.finals.jsonl")
    finals = {f["task_id"]: f for f in read_records(finals_file)[0]} if finals_file.is_file() else {}
    keys = [replay_key(r["request"]) for r in read_records(log)[0]]
    tasks = logged_tasks(load_dataset(DATASETS[args.dataset]), args.ids,
                         lambda t: any(belongs(k, t.problem) for k in keys))
    with tempfile.TemporaryDirectory() as folder:
        prompts = write_prompts(Path(args.checkout), Path(folder) / "prompts")
        selections: dict[str, list[list[str]]] = {}

        def run(task, url: str, _folder: Path) -> dict:
            settings = {**RELEASED, "gvr_rollouts": args.rollouts, **dict(s.split("=", 1) for s in args.set),
                        "base_url": url, "prompts_dir": str(prompts)}
            output, selections[task.id] = run_gvr(task.problem, settings)
            return output

        rows = []
        for task, output, asked in replayed(log, tasks, run, delay=args.delay):
            row = compare(task, [k for k in keys if belongs(k, task.problem)], asked, output,
                          selections.get(task.id, []), finals.get(task.id))
            rows.append(row | {"delay_s": args.delay})
            print(f"{task.id}: {row['matched']}/{row['recorded_calls']} matched, first divergence: "
                  f"{row.get('first_divergence', 'none')}", flush=True)
    write_results(args.out_dir, f"{args.dataset}.{args.out_suffix}", rows, markdown(rows), log)


if __name__ == "__main__":
    main()
