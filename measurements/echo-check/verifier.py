"""Does the 1.5B model copy the example answer of CodePRM's verifier prompt?

The released `llm_score_thought` prompt ends with an example answer, {"1-Thought": 0.3, "2-Thought": 0.8,
"3-Thought": 1.0}. Its first GVR verifications on apps_interview150 (2026-11-27) began with 0.3 in 15 of 17
replies. For held-out problems (apps_interview150 problems of the knowledge base outside the measured
`--sample 20 --seed 5` set, drawn with seed 29) the model scores the problem's KB steps as thoughts, with the
reference solution and its public-test feedback ("right") and with a one-operator flip of it that fails a public
test ("wrong"), under the released example, placeholder scores (`<score of thought 1>`) and no example answer.
A reply "echoes" when its scores begin with the example's (0.3, then 0.8, then 1.0, as far as there are
thoughts). Run from the repository root: `python measurements/echo-check/verifier.py` (resumable); results go
to `verifier.jsonl` beside it.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from blocks import broken  # beside this script: the same operator flips

from codeforest.agents.verifier import score_thoughts, with_example
from codeforest.bench import select_tasks
from codeforest.context import Context
from codeforest.kb import read_steps
from codeforest.loading import load_dataset, reference_solutions
from codeforest.prompts import load_prompt
from codeforest.tools.models import get_chat_model
from codeforest.tools.sandbox import run_public_tests
from codeforest.tools.testing import prm_feedback

OUT = Path(__file__).with_name("verifier.jsonl")
COUNT = 10
EXAMPLE = [0.3, 0.8, 1.0]


def variant(prompt, name: str):
    """The verifier prompt with the released example answer, placeholder scores, or no example answer."""
    return with_example(prompt, {"no example": "none"}.get(name, name))


def echoes(scores: list[float]) -> bool:
    """Whether the scores begin with the example answer's, as far as there are thoughts."""
    shown = min(len(scores), len(EXAMPLE))
    return shown > 0 and scores[:shown] == EXAMPLE[:shown]


def main() -> int:
    done = {(r["problem"], r["code"], r["variant"]) for r in map(json.loads, OUT.open())} if OUT.exists() else set()
    context = Context(model="local")
    model = get_chat_model(context)
    base = load_prompt("verifier")
    tasks = {t.id: t for t in load_dataset("apps_interview150")}
    measured = {t.id for t in select_tasks(list(tasks.values()), sample=20, seed=5)}
    solutions = {r["id"]: r["solution"] for r in reference_solutions("apps_interview150")}
    kb = [r for r in read_steps("tools/kb_steps.jsonl")
          if r["source"] == "apps_interview150" and r["id"] not in measured and r["id"] in solutions]
    for record in random.Random(29).sample(kb, COUNT):
        problem, thoughts = tasks[record["id"]].problem, record["steps"]
        right = solutions[record["id"]]
        wrong, failed = broken(problem, "", right, context)
        programs = {"right": (right, run_public_tests(problem, right, timeout=context.test_timeout))}
        if wrong is not None:
            programs["wrong"] = (wrong, failed)
        for name in ("released", "placeholders", "no example"):
            prompt = variant(base, name)
            for kind, (code, result) in programs.items():
                if (record["id"], kind, name) in done:
                    continue
                reply = score_thoughts(model, prompt, problem["prompt"], thoughts, code, prm_feedback(result),
                                       structured=context.structured_output)
                row = {"problem": record["id"], "code": kind, "variant": name, "thoughts": len(thoughts),
                       "public_passed": result.all_passed, "scores": reply.value, "parsed": reply.parsed,
                       "echoed": reply.parsed and echoes(reply.value), "answer": reply.raw}
                with OUT.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(f"{record['id']:10} {kind:5} {name:12} {row['scores']} echoed {row['echoed']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
