"""Replay the released RPM-MCTS's recorded calls into codeforest's rpm_mcts graph and compare, problem by problem.

    python measurements/conformance/rpm_mcts/replay.py CHECKOUT [--dataset apps|humaneval] [--log L] [--finals F]
        [--ids ...] [--out-dir D]

codeforest runs with the released run's settings (``run_all.py``'s defaults and ``MCTS_Task`` as ``run_mcts.py``
builds it; ``RELEASED`` below) and its wording (a prompts folder ``released_prompts.py`` writes from CHECKOUT),
against ``codeforest recorder`` replaying the log. Its knowledge base is built, as the released one is, from
codeforest's packaged steps (the same 1,667 step prefixes, WordLlama embeddings) into a temporary folder (``--kb``
keeps one). For each problem: the calls codeforest made that the log answered, of the calls the released code
made (each prompt asked as often, in any order); the first request the log could not answer (its role, and a diff
against the nearest recorded request of that problem); whether the final programs are the same; and whether the
trees have the same shape (the depth of each leaf, in the released code's depth-first order, children in the
order they were made) and the same leaf values. Results go to ``DATASET.SUFFIX.jsonl`` and ``DATASET.SUFFIX.md``
in ``--out-dir`` (default: beside this script).
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

from codeforest.api import solve
from codeforest.jsonl import read_records
from codeforest.loading import load_dataset
from codeforest.recorder import replay_key
from codeforest.tools.knowledge import PACKAGED_STEPS, KnowledgeBase, read_steps

HERE = Path(__file__).parent
# The rows record.sh gives the released code: its own dataset/apps_v2/apps_test_introductory150.jsonl (byte for byte
# codeforest's apps_introductory150), and codeforest's humaneval164 in the same row format.
DATASETS = {"apps": "apps_introductory150", "humaneval": "humaneval164"}
# run_all.py's defaults (--rollout 5, --kb_coef 0.5) and MCTS_Task as run_mcts.py builds it: branch 3,
# exploration_constant 0.5, the sibling filter at 0.85 (use_embedding_diversity), end_gate 9, temperature 0.7 on
# every call (the topic call too: ChatAPI.generate's default), the fullsteps roll-out (execution reward, 0.5/0.5),
# KB 2 on, KB 1 off, use_ldb_debug False (the locator then reads the evaluator's analysis, which is also the
# reflection), node edit and re-roll-out (fullstepsPolicy), 5 s per test (HumanevalExecutor), plain text answers.
# The released client sends no max_tokens; no codeforest setting does that (max_tokens 0 on an endpoint sends its
# per-role 2048/4096), so every request differs there until one does.
RELEASED = {"model": "Qwen2.5-7B-Instruct", "api_key_env": "CONFORMANCE_KEY", "structured_output": False,
            "rpm_rollouts": 5, "rpm_width": 3, "rpm_beta": 0.5, "rpm_alpha": 0.5, "rpm_similarity": 0.85,
            "rpm_gamma": 0.5, "rpm_success": 9.0, "rpm_temperature": 0.7, "rpm_topic_temperature": 0.7,
            "rpm_selection": "released", "rpm_kb": True, "rpm_filter": True, "rpm_exec_reward": True,
            "rpm_edit": True, "rpm_rerollout": True, "rpm_rerollout_return": "replace", "rpm_ldb": False,
            "rpm_reflection": "evaluator", "test_timeout": 5.0, "kb_embedder": "wordllama",
            "max_tokens": -1, "rpm_layout": "released", "rpm_extract_steps": True,  # no max_tokens sent, as released
            "rpm_results_text": "released"}
ROLES = {"select the most relevant topic": "Thinker (topic)",
         "break down each solution step": "Step extractor",
         "determine whether the last thought step": "Thinker (node edit)",
         "provide the correct **next step**": "Thinker (next step)",
         "Your role is to act as an evaluator": "Critic (step score)",
         "wrong code to solving this problem previously": "Thinker (re-roll-out)",
         "continue from the provided steps to complete all remaining steps": "Thinker (roll-out)",
         "code implementer": "Solver",
         "Please evaluate and return the correctness score": "Critic (solution evaluator)",
         "Which specific step went wrong": "Critic (error-step locator)"}


def role(key: str) -> str:
    """The role that asked a request, read from its one user message (markers tried in order)."""
    text = "\n".join(m["content"] for m in json.loads(key)["messages"])
    return next((name for marker, name in ROLES.items() if marker in text), "unknown")


def belongs(key: str, problem: dict) -> bool:
    """Whether a request shows this problem's text (its entry point alone is not enough: a program in the request
    can define a function of that name)."""
    return any(problem["prompt"].strip() in m["content"] for m in json.loads(key)["messages"])


def by_problem(keys: list[str], problems: list[dict]) -> dict[str, list[str]]:
    """The logged requests of each problem. Every prompt but the step extractor's shows its problem; an extractor
    call belongs to the problem of the call before it (one worker: the log is in call order)."""
    found: dict[str, list[str]] = {p["id"]: [] for p in problems}
    current = None
    for key in keys:
        current = next((p["id"] for p in problems if belongs(key, p)), current)
        if current is not None:
            found[current].append(key)
    return found


def codeforest_leaves(nodes: dict) -> list[dict]:
    """The leaves of codeforest's tree, depth first, children in the order they were made (as the released
    ``get_leaf_nodes`` walks its children dicts)."""
    kids: dict = {}
    for node in sorted(nodes.values(), key=lambda n: n["order"]):
        kids.setdefault(node.get("parent"), []).append(node)
    root = next((n for n in nodes.values() if n.get("parent") is None), None)
    leaves: list[dict] = []

    def walk(node: dict) -> None:
        if not kids.get(node["id"]):
            leaves.append(node)
        for child in kids.get(node["id"], []):
            walk(child)

    if root is not None:
        walk(root)
    return leaves


def compare(task, recorded: list[str], asked: list[tuple[str, bool]], output: dict, final: dict | None) -> dict:
    """One problem's comparison."""
    row = calls_row(task.id, recorded, asked, role, whole=final is not None)
    row |= {"stop_reason": output.get("stop_reason"), "error": output.get("error"),
            "wall_s": (output.get("cost") or {}).get("wall_s"), "released_finish": (final or {}).get("finish")}
    row["same_final_program"] = final is not None and same_program(task.problem, output.get("final_code"),
                                                                   final.get("solution") or "")
    paths = (final or {}).get("paths") or []
    leaves = codeforest_leaves(output.get("nodes") or {})
    row["released_shape"] = [p["steps_num"] for p in paths]
    row["codeforest_shape"] = [n["depth"] for n in leaves]
    row["same_shape"] = row["released_shape"] == row["codeforest_shape"]
    row["released_values"] = [round(p["value"], 3) for p in paths]
    row["codeforest_values"] = [round(n.get("value", 0.0), 3) for n in leaves]
    row["same_values"] = row["same_shape"] and all(
        abs(a - n.get("value", 0.0)) < 1e-6 for a, n in zip((p["value"] for p in paths), leaves, strict=True))
    return row


def markdown(rows: list[dict]) -> str:
    """The per-problem table and each first divergence's diff."""
    lines = ["| problem | calls matched / released | codeforest calls | first divergence | same final program | "
             "same tree shape (leaf depths) | same leaf values |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        first = first_cell(r)
        if r.get("released_next") and r["released_next"] != r.get("first_divergence"):
            first += f"; the released code asked: {r['released_next']}"
        if str(r.get("stop_reason", "")).startswith("error"):
            first += f"; codeforest stopped with {r['stop_reason'].splitlines()[0]}"
        whole = r["recorded_whole"]
        lines.append(f"| {r['problem']} | {r['matched']} / {r['recorded_calls']} | {r['codeforest_calls']} | {first} | "
                     f"{'yes' if r['same_final_program'] else 'no' if whole else '-'} | "
                     f"{'yes' if r['same_shape'] else 'no'} ({r['released_shape']} vs {r['codeforest_shape']}) | "
                     f"{'yes' if r['same_values'] else 'no'} |")
    lines += divergence_sections(rows, lambda r: f"The released code's call at this point: {r['released_next']}. "
                                 "The diff is against the nearest recorded request of this problem.")
    return "\n".join(lines) + "\n"


def build_kb(folder: Path) -> Path:
    """A codeforest knowledge base of the packaged steps: the documents the released KB was built from."""
    if not (folder / "kb.json").is_file():
        KnowledgeBase(folder, create=True).add([r for r in read_steps(PACKAGED_STEPS) if r["steps"]])
    return folder


def main() -> None:
    """Replay, compare, write the results."""
    parser = replay_parser(__doc__, "DATASET", HERE)
    parser.add_argument("--dataset", choices=DATASETS, default="apps", help="as record.sh ran (CONFORMANCE_DATASET)")
    parser.add_argument("--kb", help="the knowledge base's folder (built there when empty; default: a temporary one)")
    args = parser.parse_args()
    log = Path(args.log or HERE / f"{args.dataset}.calls.jsonl")
    finals_file = Path(args.finals or HERE / f"{args.dataset}.finals.jsonl")
    finals = {f["task_id"]: f for f in read_records(finals_file)[0]} if finals_file.is_file() else {}
    every = load_dataset(DATASETS[args.dataset])
    logged = by_problem([replay_key(r["request"]) for r in read_records(log)[0]], [t.problem for t in every])
    tasks = logged_tasks(every, args.ids, lambda t: logged[t.id])
    with tempfile.TemporaryDirectory() as folder:
        prompts = write_prompts(Path(args.checkout), Path(folder) / "prompts")
        kb = build_kb(Path(args.kb) if args.kb else Path(folder) / "kb")

        def run(task, url: str, _folder: Path) -> dict:
            settings = {**RELEASED, "base_url": url, "prompts_dir": str(prompts), "kb_path": str(kb)}
            return solve(task.problem, "rpm_mcts", context=settings)

        rows = []
        for task, output, asked in replayed(log, tasks, run, delay=args.delay):
            row = compare(task, logged[task.id], asked, output, finals.get(task.id))
            rows.append(row | {"delay_s": args.delay})
            print(f"{task.id}: {row['matched']}/{row['recorded_calls']} matched, first divergence: "
                  f"{row.get('first_divergence', 'none')}", flush=True)
    write_results(args.out_dir, f"{args.dataset}.{args.out_suffix}", rows, markdown(rows), log)


if __name__ == "__main__":
    main()
