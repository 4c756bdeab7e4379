"""Replay the released RethinkMCTS's recorded calls into codeforest's RethinkMCTS graph and compare, problem by problem.

    python measurements/conformance/rethink_mcts/replay.py CHECKOUT [--log ...] [--finals ...] [--ids ...]

codeforest runs with the released code's settings (``RELEASED``: its prompts, read from CHECKOUT by
released_prompts.py; its feedback layout, discount, width, rollouts, P-UCB constants, one rethink per node, the
block analysis on, 1,024 output tokens per call, 10 s per test, text answers) against ``codeforest recorder``
replaying the log. For each problem: the calls codeforest made that the log answered, of the calls the released
code made (compared per request: each prompt asked as often, in any order); the first request the log could not
answer (its role, and a diff against the nearest recorded request of that problem and role: a repr per line when
they differ in line ends only), or, when codeforest asked fewer, the first recorded request it did not ask;
whether the final programs are the same (the released one as its executor runs it: the text of its first
```python block) and whether the trees have the same shape (the path each rollout selects, as positions among
siblings from the root, ``root->0->2``, which the released run prints as ``selection_i``). The released paths
come from the finals file (``selections``, written by record.sh) or from the released run's output
(``--released-log``: record.sh's ``released.log``).
Results go to ``DATASET.SUFFIX.jsonl`` and ``DATASET.SUFFIX.md`` (``--out-suffix``, default ``replay``: the
files table.py reads) beside this script (``--out-dir``); DATASET is ``humaneval`` or, for a recording made with
``CONFORMANCE_DATASET=apps``, ``apps`` (``--dataset``).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
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
from codeforest.tools.released_exec import released_program

HERE = Path(__file__).parent
DATASETS = {"humaneval": "humaneval164", "apps": "apps_interview150"}  # the files record.sh gives the released code
# The released code's settings (run.py's defaults and its constants), as codeforest's settings.
RELEASED = {
    "rethink_rollouts": 16,  # --rollout 16 (--max-sample-times 768 never binds)
    "rethink_width": 3,  # --width 3
    "rethink_c_base": 10.0, "rethink_c": 4.0,  # var_p_uct: --ucb-base 10, --ucb-constant 4
    "rethink_gamma": 0.9,  # RethinkMCTS.gamma
    "rethink_reward_a": 0.8, "rethink_reward_b": 0.2,  # estimate = 0.8 * pass rate + 0.2 * evaluation
    "rethink_max_rethinks": 1,  # --max_think_times 2: one rethink, then an expansion with feedback
    "rethink_feedback_layout": "released",  # one "Above is the combination of ..." text, reset_child's wording
    "rethink_rethink": True, "rethink_verbal_feedback": True, "rethink_block_info": True,  # the LDB analysis on
    "rethink_self_eval": True, "rethink_evaluator": "self_eval", "rethink_locate": "leaf",
    "rethink_concurrency": 1,
    "structured_output": False,  # the released text parsing
    "released_text": True,  # thoughts read and written back as released (the state's text as written)
    "code_shown": "reply",  # the rethink, the evaluation and the feedback show the Solver's whole reply
    "rethink_eval_clamp": False,  # the evaluation's first number as written
    "rethink_block_trace": "released",  # LDB's blocks, runs and four-message chat
    "temperature": 0.0,
    "max_tokens": 1024,  # generate_response_api's max_length; the LDB chat sets none (so does codeforest's, above)
    "test_timeout": 10.0,  # HumanevalExecutor: 10 s per test
    "model": "gpt-4o-mini-2024-07-18", "api_key_env": "CONFORMANCE_KEY",
}
ROLES = {"Above is a problem to be solved": "Expansion", "provide new thoughts": "Expansion with feedback",
         "Complete the Python program": "Simulation", "You are a evaluator": "Evaluation",
         "You are an expert programmer.": "Rethink", "You are an expert programming assistant.": "LDB block analysis"}
SELECTION = re.compile(r"^selection_\d+: \n(root.*)$", re.M)


def role(key: str) -> str:
    """The role that asked a request, read from its messages (the system message, else the instruction)."""
    msgs = json.loads(key)["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    user = msgs[-1]["content"] if msgs else ""
    for marker in ("You are a evaluator", "You are an expert programmer.", "You are an expert programming assistant."):
        if system.startswith(marker):
            return ROLES[marker]
    return next((name for marker, name in ROLES.items() if marker in user), "unknown")


def belongs(key: str, problem: dict) -> bool:
    """Whether a request is about this problem: its entry point is defined in it."""
    mark = f"def {problem['entry_point']}("
    return any(mark in m["content"] for m in json.loads(key)["messages"])


def released_selections(log: Path, prefix: str) -> dict[str, list[str]]:
    """Each problem's selected paths, from the released run's output (``Solving Problem #N``, ``selection_i``),
    keyed ``PREFIX/N``."""
    found: dict[str, list[str]] = {}
    parts = re.split(r"^Solving Problem #(\d+)$", log.read_text(encoding="utf-8", errors="replace"), flags=re.M)
    for number, text in zip(parts[1::2], parts[2::2], strict=True):
        found[f"{prefix}/{number}"] = SELECTION.findall(text)
    return found


class Shape:
    """codeforest's selected paths, as sibling positions, and the rewards it gave, from its events (``node_created``,
    ``selected``, ``reward``)."""

    def __init__(self):
        self.position: dict[str, int] = {}
        self.children: Counter = Counter()
        self.paths: list[str] = []
        self.rewards: list[float] = []

    def __call__(self, event: dict) -> None:
        if event.get("event") == "node_created":
            self.position[event["node"]] = self.children[event["parent"]]
            self.children[event["parent"]] += 1
        elif event.get("event") == "selected":
            self.paths.append("->".join(["root", *(str(self.position.get(n, "?")) for n in event["path"][1:])]))
        elif event.get("event") == "reward":
            self.rewards.append(event["reward"])


def compare(task, recorded: list[str], asked: list[tuple[str, bool]], output: dict, final: dict | None,
            selections: list[str] | None) -> dict:
    """One problem's comparison."""
    row = calls_row(task.id, recorded, asked, role, whole=final is not None)
    hits = [k for k, hit in asked if hit]
    row |= {"same_order": hits == recorded[:len(hits)], "stop_reason": output.get("stop_reason"),
            "error": output.get("error"), "wall_s": (output.get("cost") or {}).get("wall_s")}
    row["same_final_program"] = final is not None and same_program(task.problem, output.get("final_code"),
                                                                   released_program(final["program"]))
    # the final program is the highest-rewarded (a rethought node's record holds only its latest program's reward)
    rewards = output.get("rewards") or []
    row["final_value"] = {"released": final.get("train_reward") if final else None,
                          "codeforest": max(rewards) if rewards else None}
    row["released_shape"], row["codeforest_shape"] = selections, output.get("paths", [])
    row["same_shape"] = selections is not None and selections == row["codeforest_shape"]
    return row


def markdown(rows: list[dict], settings: dict) -> str:
    """The per-problem table, the settings and each first divergence's diff."""
    lines = ["| problem | calls matched / released | codeforest calls | first divergence | same final program | "
             "its value, released / codeforest | same tree shape (rollouts) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        shape = "-" if r["released_shape"] is None else "yes" if r["same_shape"] else "no"
        value = " / ".join("-" if v is None else f"{v:.4g}" for v in r["final_value"].values())
        same = "yes" if r["same_final_program"] else "no" if r["recorded_whole"] else "-"
        lines.append(f"| {r['problem']} | {r['matched']} / {r['recorded_calls']} | {r['codeforest_calls']} | "
                     f"{first_cell(r)} | {same} | {value} | "
                     f"{shape} ({len(r['released_shape'] or [])} vs {len(r['codeforest_shape'])}) |")
    lines += ["", "Settings: " + ", ".join(f"`{k}={v}`" for k, v in settings.items() if k != "api_key_env")]
    lines += divergence_sections(rows)
    return "\n".join(lines) + "\n"


def main() -> None:
    """Replay, compare, write the results."""
    parser = replay_parser(__doc__, "DATASET", HERE)
    parser.add_argument("--dataset", choices=DATASETS, default="humaneval",
                        help="as record.sh ran (CONFORMANCE_DATASET)")
    parser.add_argument("--released-log", help="the released run's output, for the selected paths (record.sh's "
                                               "released.log); default: the finals file's")
    args = parser.parse_args()
    log = Path(args.log or HERE / f"{args.dataset}.calls.jsonl")
    finals_file = Path(args.finals or HERE / f"{args.dataset}.finals.jsonl")
    keys = [replay_key(r["request"]) for r in read_records(log)[0]]
    finals = {f["task_id"]: f for f in (read_records(finals_file)[0] if finals_file.is_file() else [])}
    prefix = "HumanEval" if args.dataset == "humaneval" else "APPS"
    selections = released_selections(Path(args.released_log), prefix) if args.released_log else \
        {task: f["selections"] for task, f in finals.items() if "selections" in f}
    tasks = logged_tasks(load_dataset(DATASETS[args.dataset]), args.ids,
                         lambda t: any(belongs(k, t.problem) for k in keys))
    with tempfile.TemporaryDirectory() as folder:
        settings = {**RELEASED, "prompts_dir": str(write_prompts(Path(args.checkout), Path(folder) / "prompts"))}

        def run(task, url: str, _folder: Path) -> dict:
            shape = Shape()
            try:
                output = solve(task.problem, "rethink_mcts", context={**settings, "base_url": url}, on_event=shape)
            finally:
                paths[task.id], rewards[task.id] = shape.paths, shape.rewards
            return output

        rows, paths, rewards = [], {}, {}
        for task, output, asked in replayed(log, tasks, run, delay=args.delay):
            row = compare(task, [k for k in keys if belongs(k, task.problem)], asked,
                          {**output, "paths": paths.get(task.id, []), "rewards": rewards.get(task.id, [])},
                          finals.get(task.id), selections.get(task.id))
            rows.append(row | {"delay_s": args.delay})
            print(f"{task.id}: {row['matched']}/{row['recorded_calls']} matched, first divergence: "
                  f"{row.get('first_divergence', 'none')} (call {row.get('call', '-')}), final "
                  f"{'same' if row['same_final_program'] else 'different'}, shape "
                  f"{'same' if row['same_shape'] else 'different'}", flush=True)
    write_results(args.out_dir, f"{args.dataset}.{args.out_suffix}", rows, markdown(rows, RELEASED), log)


if __name__ == "__main__":
    main()
