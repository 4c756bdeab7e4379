"""Does the 1.5B model answer RethinkMCTS's thought request by copying the prompt's example?

One first expansion (``thinker.thoughts``, RethinkMCTS's prompt and settings) per held-out problem, with and
without the released code's system message, and in the paper's text format (no JSON schema), on problems no
measurement uses (HumanEval outside the `--sample 20 --seed 5` set, apps_interview150 outside its
`--sample 20 --seed 5` set). Run from the
repository root: `python measurements/echo-check/check.py`; results go to `measurements/echo-check/results.jsonl`.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from pathlib import Path

from codeforest.agents import thinker
from codeforest.bench import select_tasks
from codeforest.context import Context
from codeforest.loading import load_dataset
from codeforest.prompts import load_prompt
from codeforest.tools.models import get_chat_model

EXAMPLE = ("print(2 + 3)", "a=2+3", "can't be solved by Python")
PAPER_EXAMPLE = ("We could use the print function to finish the task in one line: print(2 + 3)",
                 "We should calculate the problem by setting a=2+3, and then print(a)",
                 "The problem can't be solved by Python.")
OUT = Path(__file__).with_name("results.jsonl")


def held_out(dataset: str, count: int) -> list:
    """``count`` problems of ``dataset`` outside the measured `--sample 20 --seed 5` set, drawn with seed 11."""
    tasks = load_dataset(dataset)
    measured = {t.id for t in select_tasks(tasks, sample=20, seed=5)}
    return random.Random(11).sample([t for t in tasks if t.id not in measured], count)


def with_paper_example(prompt):
    """The shipped prompt with the paper's example thoughts in place of its placeholders (as before 2026-11-25)."""
    def restore(node):
        if isinstance(node, dict):
            return {k: restore(v) for k, v in node.items()}
        for i, text in enumerate(PAPER_EXAMPLE, 1):
            node = node.replace(f"<thought {i} about this problem>", text)
        return node

    return dataclasses.replace(prompt, templates=restore(prompt.templates))


def main() -> int:
    done = {(r["problem"], r["variant"]) for r in map(json.loads, OUT.open())} if OUT.exists() else set()
    model = get_chat_model(Context(model="local"))
    shipped = load_prompt("thinker_mcts")
    paper = with_paper_example(shipped)
    variants = {"released system message": (paper, True),
                "no system message": (dataclasses.replace(paper, templates={
                    k: v for k, v in paper.templates.items() if k != "system"}), True),
                "text format": (paper, False),
                "placeholder example": (shipped, True)}
    for task in held_out("humaneval", 8) + held_out("apps_interview150", 4):
        for name, (prompt, structured) in variants.items():
            if (task.id, name) in done:
                continue
            reply = thinker.thoughts(model, prompt, task.problem, previous="", width=3, structured=structured)
            thoughts = [t for t, _ in thinker.parse_thoughts(reply.raw, 3)]  # before agents.thinker drops echoes
            echoed = sum(any(e in t for e in EXAMPLE) for t in thoughts)
            with OUT.open("a") as f:
                f.write(json.dumps({"problem": task.id, "variant": name, "echoed": echoed,
                                    "thoughts": thoughts}) + "\n")
            print(f"{task.id:24} {name:26} echoed {echoed}/{len(thoughts)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
