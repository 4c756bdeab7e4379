"""Building the RPM-MCTS knowledge base: algorithmic steps of reference solutions, then their embeddings.

Step 1 (model calls, slow): for each problem of the source datasets, taken in turn from each dataset so a
partial build covers all of them, the model writes the steps of the reference solution
(``agents.thinker.solution_steps``) and the problem's topic is classified by the same call RPM-MCTS makes on the
problem it solves (``agents.thinker.classify_topic``), so both sides of the topic filter come from one
classifier. Each answer is appended to a steps JSONL file at once (flushed and synced), so a killed build
continues where it stopped. Step 2 (no model, fast): the steps are embedded into a
Chroma collection (``tools/knowledge.py``).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Callable
from pathlib import Path

from codeforest.agents import thinker
from codeforest.context import Context
from codeforest.cost import tokens_spent
from codeforest.jsonl import append_record, rewrite_records
from codeforest.loading import reference_solutions
from codeforest.prompts import Prompt, load_prompt
from codeforest.tools.knowledge import KnowledgeBase, fingerprint, read_steps

log = logging.getLogger("codeforest.kb")
TOPIC_CALL = "thinker_rpm.topic"  # a record's topic came from the search's own topic call
def topic_source(prompt: Prompt) -> str:
    """Where a record's topic comes from: the search's own topic call, in this wording of it (``kb retopic``
    reclassifies the records another wording classified)."""
    return f"{TOPIC_CALL}@{hashlib.sha256(prompt.templates['topic'].encode()).hexdigest()[:12]}"


def interleave(groups: list[list]) -> list:
    """The items of several lists taken one from each in turn (a partial run then covers all of them)."""
    return [item for row in itertools.zip_longest(*groups) for item in row if item is not None]


def interleaved(datasets: list[str], data_dir: str | None = None) -> list[dict]:
    """The source problems, one from each dataset in turn: ``{"id", "source", "prompt", "solution"}``."""
    return interleave([[{**p, "source": name} for p in reference_solutions(name, data_dir)] for name in datasets])


def write_steps(datasets: list[str], steps_path: str | Path, context: Context, *, data_dir: str | None = None,
                limit: int | None = None, on_step: Callable[[dict, int, int], None] | None = None) -> int:
    """Write the steps of every source problem not yet in ``steps_path``; return how many were written."""
    from codeforest.tools.models import get_chat_model

    steps_path = Path(steps_path)
    done = {(r["source"], r["id"]) for r in read_steps(steps_path)}
    todo = [p for p in interleaved(datasets, data_dir) if (p["source"], p["id"]) not in done]
    todo = todo[:limit] if limit is not None else todo
    steps_path.parent.mkdir(parents=True, exist_ok=True)  # after the datasets load: a misspelt one makes no folder
    model = get_chat_model(context)
    prompt = load_prompt("kb_steps", context.prompts_dir or None)
    topic_prompt = load_prompt("thinker_rpm", context.prompts_dir or None)
    for i, problem in enumerate(todo, 1):
        reply = thinker.solution_steps(model, prompt, problem["prompt"], problem["solution"])
        topic = thinker.classify_topic(model, topic_prompt, problem["prompt"])
        record = {"id": problem["id"], "source": problem["source"], "fingerprint": fingerprint(problem["prompt"]),
                  "prompt": problem["prompt"], "topic": topic.value, "topic_from": topic_source(topic_prompt),
                  "steps_topic": reply.value["topic"], "steps": reply.value["steps"],
                  "tokens": tokens_spent(reply.cost) + tokens_spent(topic.cost)}
        append_record(steps_path, record)
        if on_step:
            on_step(record, i, len(todo))
    return len(todo)


def retopic(steps_path: str | Path, context: Context, *,
            on_record: Callable[[dict, int, int], None] | None = None) -> int:
    """Reclassify the topic of every record of a steps file whose topic is not from the search's own topic call in
    its current wording (the steps call's topic is kept as ``steps_topic``); the file is rewritten after each
    record, so a killed run continues. Return how many were reclassified."""
    from codeforest.tools.models import get_chat_model

    steps_path = Path(steps_path)
    records = read_steps(steps_path)
    topic_prompt = load_prompt("thinker_rpm", context.prompts_dir or None)
    source = topic_source(topic_prompt)
    todo = [r for r in records if r.get("topic_from") != source]
    if not todo:
        return 0
    model = get_chat_model(context)
    for i, record in enumerate(todo, 1):
        topic = thinker.classify_topic(model, topic_prompt, record["prompt"])
        record.update(steps_topic=record.get("steps_topic", record["topic"]), topic=topic.value,
                      topic_from=source, tokens=record.get("tokens", 0) + tokens_spent(topic.cost))
        rewrite_records(steps_path, records)
        if on_record:
            on_record(record, i, len(todo))
    return len(todo)


def reworded(text: str, every: int = 4) -> str:
    """A light, deterministic rewording: every ``every``-th word dropped and the sentences in reverse order."""
    sentences = [s.strip() for s in text.replace("\n", " ").split(". ") if s.strip()]
    words = " ".join(reversed(sentences)).split()
    return " ".join(w for i, w in enumerate(words, 1) if i % every)


def retrieval_sanity(knowledge: KnowledgeBase, records: list[dict], *, limit: int = 50) -> dict:
    """How often a reworded problem plus its first step finds its own problem top-1 (within its topic and not)."""
    held = [r for r in records if r.get("steps") and knowledge.holds(r.get("fingerprint") or fingerprint(r["prompt"]))]
    held = held[:limit]
    own = {"topic": 0, "any": 0}
    for record in held:
        query = reworded(record["prompt"]) + "\n" + record["steps"][0]
        for key, topic in (("topic", record["topic"]), ("any", None)):
            hits = knowledge.search(query, k=1, topic=topic)
            own[key] += bool(hits) and hits[0]["problem_id"] == record["id"] and hits[0]["source"] == record["source"]
    return {"problems": len(held), "top1_in_topic": own["topic"], "top1_any_topic": own["any"]}
