"""CodePRM's training data: a tree search over thoughts, each thought labelled with its code's pass rate.

For each problem the harness runs the GVR-MCTS search without refinement (``gvr_max_refines=0``): every
node's code is written from the partial thought chain ending there and run on the public tests, as in
any graph. Only after the graph has returned does the harness run each code on the private tests the
public ones do not repeat (the benchmark files' private suites hold the public tests too; the paper's
halves are disjoint) and label every thought s with the mean pass rate of all code descending from s, its
own included (the paper's Eq. 2; ``label="mean"``: the mean of the public and those private pass rates, as
the released code). No private test enters the graph's state, prompts or logs.

Each code gives one training sample in CodePRM's format: the problem, the thoughts of its chain, the
code, its public-test feedback, the exact PRM input string and one label per thought. The output JSONL
holds ``{"type": "sample", ...}`` lines and, after each problem's samples (written in the same append),
a ``{"type": "problem", ...}`` line: the file says which problems it covers, and a rerun skips them.
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from codeforest.api import solve
from codeforest.bench import result_settings
from codeforest.context import Context
from codeforest.cost import tokens_spent
from codeforest.graphs import search
from codeforest.jsonl import append_records, read_records
from codeforest.problems import Task
from codeforest.registry import context_for
from codeforest.scoring import held_out, private_test_count, score_private
from codeforest.tools import stopwatch
from codeforest.tools.prm import prm_input, prm_steps
from codeforest.tools.redaction import redact
from codeforest.workers import as_finished, held, problem_pool

log = logging.getLogger("codeforest.prm_data")
FORMAT = "codeforest-prm/5"  # 2: thoughts numbered "i-Thought: ..." in `process` and `input`; 3: labels from
# a function problem's private asserts one by one (before, its one `check` made every label 0 or 1); 4: only from
# the private tests the public ones do not repeat (before, an MBPP label counted the public assert too); 5: an
# empty program counts 0 in its thoughts' labels (before, it was left out), and problem lines carry the settings
LABELS = ("private", "mean")
UNLABELABLE = "no private tests beyond the public ones"


def code_scores(nodes: dict, task: Task, context: Context, label: str = "private") -> dict[str, float]:
    """Each code node's score for the labels: its pass rate on ``task``'s private tests (``held_out``'s task for
    the labels), or (public + private) / 2 (``mean``)."""
    scores, private_of = {}, {}
    for node_id, node in nodes.items():
        if "code" not in node or "execution" not in node:
            continue
        if not node["code"]:  # an empty reply is a program that passes nothing, as the released code runs it
            scores[node_id] = 0.0
            continue
        if node["code"] not in private_of:  # the same program on several nodes runs once
            private_of[node["code"]] = score_private(task, node["code"], backend=context.sandbox).pass_rate or 0.0
        private = private_of[node["code"]]
        public = node["execution"].get("pass_rate", 0.0) if node["execution"].get("total") else private
        scores[node_id] = private if label == "private" else (public + private) / 2
    return scores


def step_labels(nodes: dict, scores: dict[str, float]) -> dict[str, float]:
    """Eq. 2: a thought's label is the mean score of every code in its subtree (itself included)."""
    sums: dict[str, list[float]] = {}
    for node_id, score in scores.items():
        for ancestor in search.path_to(nodes, node_id):
            sums.setdefault(ancestor, []).append(score)
    return {node_id: sum(values) / len(values) for node_id, values in sums.items()
            if nodes[node_id].get("kind") == "thought"}


def samples(task: Task, nodes: dict, labels: dict[str, float], dataset: str) -> list[dict]:
    """One training sample per code: its chain's thoughts, code, public feedback and one label per thought."""
    out = []
    question = task.problem["prompt"]
    for node_id, node in sorted(nodes.items(), key=lambda item: item[1].get("order", 0)):
        if not node.get("code") or node_id not in labels:
            continue
        path = [i for i in search.path_to(nodes, node_id) if i in labels and nodes[i].get("text", "").strip()]
        thoughts = search.thoughts_on(nodes, path)
        if not thoughts:
            continue
        feedback = node.get("feedback", "")
        process_before_code, process = prm_steps(thoughts)
        out.append({"type": "sample", "dataset": dataset, "problem_id": task.id, "node": node_id,
                    "question": question, "thoughts": thoughts, "code": node["code"], "feedback": feedback,
                    "process_before_code": process_before_code, "process": process,
                    "input": prm_input(question, thoughts, node["code"], feedback),
                    "label": [round(labels[i], 6) for i in path]})
    return out


def finished(records: list[dict]) -> tuple[set[tuple[str, str]], list[dict]]:
    """The (dataset, problem id) pairs with a problem line, and the records without the samples of any other
    problem (those a run killed before its problem line left behind)."""
    done = {(r.get("dataset"), r.get("problem_id")) for r in records if r.get("type") == "problem"}
    return done, [r for r in records if r.get("type") == "problem" or (r.get("dataset"), r.get("problem_id")) in done]


def covered(out: str | Path, *, label: str | None = None, model: str | None = None,
            settings: dict | None = None) -> set[tuple[str, str]]:
    """The (dataset, problem id) pairs a data file holds in full; samples after the last problem line (a run
    killed while writing) are dropped from the file. A file of another format, or collected with another label
    source, model or settings (``bench.result_settings``) than the ones given, is refused (one file, one recipe)."""
    path = Path(out)
    if not path.exists():
        return set()
    records, unreadable = read_records(path)
    problems = [r for r in records if r.get("type") == "problem"]
    older = {r.get("format") for r in problems} - {FORMAT}
    if older:
        raise ValueError(f"{path} holds samples in format {', '.join(sorted(map(str, older)))}, this version writes "
                         f"{FORMAT}: collect into a new file rather than mix the two")

    def shown(value: object) -> str:
        return json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)

    for key, wanted in (("label_source", label), ("model", model), ("settings", settings)):
        found = {shown(r.get(key)) for r in problems} - {shown(wanted)}
        if wanted is not None and found:
            raise ValueError(f"{path} was collected with {key} {', '.join(sorted(found))}, this run uses "
                             f"{shown(wanted)}: collect into a new file rather than mix the two")
    done, kept = finished(records)
    if unreadable or len(kept) != len(records):
        log.warning("%s: dropping %d lines of an unfinished problem", path, len(records) - len(kept) + unreadable)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.unlink(missing_ok=True)
        if kept:
            append_records(tmp, kept)
        else:
            tmp.touch()
        tmp.replace(path)
    return done


def collect(tasks: list[tuple[str, Task]], out: str | Path, context: object = None, *, label: str = "private",
            on_problem: Callable[[dict, int, int], None] | None = None, model=None,
            on_start: Callable[[str, str, dict], None] | None = None, concurrency: int = 1) -> int:
    """Search, label and append each (dataset, task) not yet in ``out``, ``concurrency`` at a time; returns how many
    were added.

    A problem without private tests beyond its public ones (no labels) is skipped before its search and written
    as a problem line with ``skipped``; one whose search raised or ended on a model fault is not written, so a
    rerun collects it again. ``on_problem`` sees all of those as ``skipped``, in the order they finish. A second
    process on the same ``out`` stops at once (``workers.InUse``), naming the holder's pid.
    ``on_start`` gets each searched problem's dataset, id and its ``stopwatch.timing`` tally (its model calls so
    far) as the search starts, from the thread that searches it."""
    if label not in LABELS:
        raise ValueError(f"label must be one of {', '.join(LABELS)}, not {label!r}")
    # no selector: every code of the tree is labelled and the final pick is unused, so Tester calls would be waste
    context = context_for("gvr", context, gvr_max_refines=0, selector="public", min_candidates=1)
    settings = result_settings(context)

    def one(dataset: str, task: Task) -> tuple[dict, list[dict]]:
        """The problem line and the records to append (none for a problem a rerun should collect)."""
        started = time.monotonic()
        problem = {"type": "problem", "format": FORMAT, "dataset": dataset, "problem_id": task.id}
        unseen = held_out(task)
        if unseen is None:  # written, so the file says it was drawn and why it has no samples; never retried
            log.warning("%s %s has no private tests beyond its public ones to label from: skipped", dataset, task.id)
            problem.update(skipped=UNLABELABLE, samples=0, label_source=label, model=context.model, settings=settings)
            return problem, [problem]
        try:
            with stopwatch.timing() as clock:
                if on_start:
                    on_start(dataset, task.id, clock)
                result = solve(task.problem, "gvr", context=context, model=model)  # the public problem only
            nodes = result["nodes"] or {}
            scores = code_scores(nodes, unseen, context, label)
        except Exception as exc:  # noqa: BLE001 - one problem's failure must not stall the whole collection
            log.exception("%s %s raised: not written, a rerun collects it", dataset, task.id)
            problem["skipped"] = redact(f"raised {type(exc).__name__}: {exc}")
            return problem, []
        written = samples(task, nodes, step_labels(nodes, scores), dataset)
        steps = [x for s in written for x in s["label"]]
        problem.update(samples=len(written), codes=len(scores), label_source=label, model=context.model,
                       settings=settings, label_tests=private_test_count(unseen),
                       private_tests=private_test_count(task), stop_reason=result["stop_reason"],
                       error=result.get("error"), mean_label=round(statistics.fmean(steps), 4) if steps else None,
                       tokens=tokens_spent(result["cost"]), wall_s=round(time.monotonic() - started, 1))
        if result["stop_reason"] == "model_error":
            log.warning("%s %s: the search ended on a model fault (%s): not written, a rerun collects it",
                        dataset, task.id, result.get("error"))
            problem["skipped"] = f"model fault: {result.get('error')}"
            return problem, []
        return problem, [*written, problem]

    added = 0
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with (held(Path(f"{out}.lock"), f"{out} is being written by another codeforest collect-prm",
               "or choose another --out"),
          problem_pool(concurrency) as pool):
        done = covered(out, label=label, model=context.model, settings=settings)
        todo = [(d, t) for d, t in tasks if (d, t.id) not in done]
        futures = [pool.submit(one, dataset, task) for dataset, task in todo]
        for i, future in enumerate(as_finished(futures), 1):
            problem, records = future.result()
            if records:  # one append from this thread: a problem's samples and its line stay together
                append_records(out, records)
            added += "skipped" not in problem
            if on_problem:
                on_problem(problem, i, len(todo))
    return added


def label_distribution(out: str | Path) -> dict:
    """The step labels of a data file's finished problems (not the samples a killed run left after its last
    problem line): counts, mean, the shares at 0 and 1, quartiles and a 5-bin histogram, over the training
    targets (a thought is counted once in every sample of a program below it); ``unlabelable`` names the problems
    drawn without held-out tests."""
    records, _ = read_records(out)
    problems = [r for r in records if r.get("type") == "problem"]
    unlabelable = [f"{r.get('dataset')} {r.get('problem_id')}" for r in problems if r.get("skipped")]
    counts = {"problems": len(problems) - len(unlabelable), "unlabelable": unlabelable}
    records = [r for r in finished(records)[1] if r.get("type") == "sample"]
    labels = [x for r in records for x in r["label"]]
    if not labels:
        return {**counts, "samples": 0, "steps": 0}
    bins = [0] * 5
    for x in labels:
        bins[min(4, int(x * 5))] += 1
    quartiles = statistics.quantiles(labels, n=4, method="inclusive") if len(labels) > 1 else [labels[0]] * 3
    return {**counts, "samples": len(records),
            "steps": len(labels), "mean": round(statistics.fmean(labels), 4),
            "zero": round(sum(x == 0 for x in labels) / len(labels), 4),
            "one": round(sum(x == 1 for x in labels) / len(labels), 4),
            "quartiles": [round(q, 4) for q in quartiles],
            "histogram": {f"[{i / 5:.1f},{(i + 1) / 5:.1f}{']' if i == 4 else ')'}": n for i, n in enumerate(bins)}}
