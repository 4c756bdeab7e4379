"""Does the 1.5B model copy the worked examples of RPM-MCTS's released step critic and solution evaluator?

The released prompts (`critic_en`, `rollout_full_steps_prompt_en` in codellm12842/RPM-MCTS prompt/prompts.py,
kept beside this script in `rpm_judges_prompts.json` with codeforest's placeholder names) end with worked
examples: two scored step lists (a permutation DP scored 10, a substring count scored 6) and four example
evaluations (the last a long analysis of `Comp_Graph` scored 2.5). For held-out MBPP problems (the knowledge
base's, outside collect-prm's `--sample 20 --seed 5` set; drawn with seed 19) the model judges the first two KB
steps (critic), and the reference solution with its public-test results and a one-operator flip of it that fails
one (evaluator), under three prompts: the released text, the released text without its examples, and the one
prompts/critic_rpm.yaml shipped until 2026-11-26 (kept in the same file; rows name it "shipped"). A reply
"echoes" when it repeats an example's content or gives more than one score tag (the parser reads the first);
`last_example` marks a score equal to the last example's (6 and 2.5), `analysis` whether any text came before
the score. Run from the repository root:
`python measurements/echo-check/rpm_judges.py` (resumable); results go to `rpm_judges.jsonl` beside it.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from pathlib import Path

from blocks import broken  # beside this script: the same operator flips

from codeforest.agents import critic
from codeforest.bench import select_tasks
from codeforest.context import Context
from codeforest.graphs.rpm_mcts import question
from codeforest.kb import read_steps
from codeforest.loading import load_dataset, reference_solutions
from codeforest.prompts import load_prompt
from codeforest.tools.models import get_chat_model
from codeforest.tools.sandbox import run_public_tests
from codeforest.tools.testing import feedback_text

HERE = Path(__file__).parent
OUT = HERE / "rpm_judges.jsonl"
COUNT = 10
ECHO = {"critic": ("valid permutation", "distinct substrings", "'D'", "perm[i"),
        "evaluate": ("similar_elements", "Comp_Graph", "erased edge", "two tuples")}
TAG = {"critic": "<score>", "evaluate": "<evaluation>"}
LAST_EXAMPLE = {"critic": 6.0, "evaluate": 2.5}
EXAMPLES = {"critic": ("Please study the following example's format.", "Below is a given problem"),
            "evaluate": ("Example Answers:", "Output:")}
def without_examples(templates: dict) -> dict:
    """The released templates with their worked examples cut out (the instructions around them kept)."""
    out = {}
    for kind, text in templates.items():
        start, end = EXAMPLES[kind]
        out[kind] = text[:text.index(start)] + text[text.index(end):]
    return out


def judged(kind: str, reply) -> dict:
    """What one reply did: its score, whether it echoed an example, how many score tags it gave."""
    tags = reply.raw.lower().count(TAG[kind])
    return {"score": reply.value, "parsed": reply.parsed, "tags": tags,
            "last_example": reply.value == LAST_EXAMPLE[kind],
            "analysis": bool(reply.raw.lower().split(TAG[kind])[0].strip()),
            "echoed": tags > 1 or any(e in reply.raw for e in ECHO[kind]), "answer": reply.raw}


def main() -> int:
    done = {(r["problem"], r["call"]) for r in map(json.loads, OUT.open())} if OUT.exists() else set()
    context = Context(model="local")
    model = get_chat_model(context)
    base, texts = load_prompt("critic_rpm"), json.loads((HERE / "rpm_judges_prompts.json").read_text())
    variants = {"released": dataclasses.replace(base, templates=texts["released"]),
                "released, no examples": dataclasses.replace(base, templates=without_examples(texts["released"])),
                "shipped": dataclasses.replace(base, templates=texts["shipped until 2026-11-26"])}
    tasks = {t.id: t for t in load_dataset("mbpp500")}
    collected = {t.id for t in select_tasks(list(tasks.values()), sample=20, seed=5)}
    solutions = {r["id"]: r["solution"] for r in reference_solutions("mbpp500")}
    kb = [r for r in read_steps("tools/kb_steps.jsonl") if r["source"] == "mbpp500" and r["id"] not in collected]
    for record in random.Random(19).sample(kb, COUNT):
        problem = tasks[record["id"]].problem
        shown, steps, code = question(problem), record["steps"], solutions[record["id"]]
        inputs = {"critic": None}
        for name, program in (("evaluate right", code), ("evaluate wrong", None)):
            if program is None:
                program, result = broken(problem, "", code, context)
                if program is None:
                    continue
            else:
                result = run_public_tests(problem, program, timeout=context.test_timeout)
            inputs[name] = (program, feedback_text(result))
        for variant, prompt in variants.items():
            for name, given in inputs.items():
                call = name if variant == "released" else f"{name} ({variant})"  # the first rows: released
                if (record["id"], call) in done:
                    continue
                if given is None:
                    reply = critic.score_steps(model, prompt, shown, steps=steps[:2])
                else:
                    reply = critic.evaluate_solution(model, prompt, shown, steps=steps, code=given[0],
                                                     results=given[1])
                row = {"problem": record["id"], "call": call, "variant": variant, **judged(name.split()[0], reply)}
                with OUT.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(f"{record['id']:10} {call:40} score {row['score']:4} analysis {row['analysis']} "
                      f"echoed {row['echoed']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
