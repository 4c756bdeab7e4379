"""Does the 1.5B model answer RPM-MCTS's topic question with the topic its prompt names as an example?

The released topic prompt (`get_topic_prompt_en`) ends "... wrapped in <topic></topic> tags such as
<topic>Data Structures</topic>", and the knowledge base's topics, from that call (`kb retopic`), file 188 of its 306
problems under "Data Structures" and none under "String Processing", though a third of them are MBPP problems. For
held-out problems of the KB (12 of MBPP outside collect-prm's `--sample 20 --seed 5` set and 12 of CodeContests,
which no measurement uses; drawn with seed 23) the model (greedy, as the search asks it) answers the topic question
with the example topic and with a placeholder (`<topic>...</topic>`). Run from the repository root:
`python measurements/echo-check/topics.py` (resumable); results go to `topics.jsonl` beside it.
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
from codeforest.graphs.rpm_mcts import question
from codeforest.kb import read_steps
from codeforest.loading import load_dataset
from codeforest.prompts import load_prompt
from codeforest.tools.models import get_chat_model

OUT = Path(__file__).with_name("topics.jsonl")
EXAMPLE = "such as <topic>Data Structures</topic>"
PLACEHOLDER = "such as <topic>...</topic>"
COUNT = 12


def with_example(prompt, example: str):
    """The topic prompt with ``example`` in place of its example tag (the released one or the placeholder)."""
    templates = dict(prompt.templates)
    for shown in (EXAMPLE, PLACEHOLDER):
        templates["topic"] = templates["topic"].replace(shown, example)
    return dataclasses.replace(prompt, templates=templates)


def main() -> int:
    done = {(r["problem"], r["variant"]) for r in map(json.loads, OUT.open())} if OUT.exists() else set()
    model = get_chat_model(Context(model="local"))
    shipped = load_prompt("thinker_rpm")
    variants = {"example": with_example(shipped, EXAMPLE), "placeholder": with_example(shipped, PLACEHOLDER)}
    kb = read_steps("tools/kb_steps.jsonl")
    chosen = []
    for dataset, skip in (("mbpp500", 20), ("codecontests150", 0)):
        tasks = {t.id: t for t in load_dataset(dataset)}
        measured = {t.id for t in select_tasks(list(tasks.values()), sample=skip, seed=5)} if skip else set()
        pool = [r for r in kb if r["source"] == dataset and r["id"] not in measured]
        chosen += [(r, tasks[r["id"]]) for r in random.Random(23).sample(pool, COUNT)]
    for record, task in chosen:
        for name, prompt in variants.items():
            if (task.id, name) in done:
                continue
            reply = thinker.classify_topic(model, prompt, question(task.problem))
            row = {"problem": task.id, "variant": name, "topic": reply.value, "parsed": reply.parsed,
                   "kb_topic": record["topic"], "answer": reply.raw}
            with OUT.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{task.id:18} {name:12} {reply.value}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
