"""Does the 1.5B model copy the example explanations of RethinkMCTS's block analysis?

For held-out HumanEval problems (outside the measured `--sample 20 --seed 5` set, drawn with seed 13) the
reference solution gets one operator flipped, the first flip that fails a public test; the failing test is traced
block by block in the sandbox and the model judges the blocks (``agents.critic.analyze_blocks``, JSON-schema
decoding as by default), once with the paper's example answers and once with the placeholder explanations
shipped since 2026-11-25. An
answer "echoes" when it contains the paper's example explanations. Run from the repository root:
`python measurements/echo-check/blocks.py` (resumable); results go to `blocks.jsonl` beside it.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import sys
from pathlib import Path

from codeforest.agents import critic
from codeforest.bench import select_tasks
from codeforest.context import Context
from codeforest.loading import load_dataset, reference_solutions
from codeforest.problems import public_suite
from codeforest.prompts import load_prompt
from codeforest.tools.models import get_chat_model
from codeforest.tools.sandbox import run_public_tests
from codeforest.tools.tracing import failing_test_trace

EXAMPLE = ("initializes variable 'a' and 'b'", "does not add the two integers", "subtracts the second integer")
PAPER_EXAMPLE = {"<what BLOCK-1 does>": "The block initializes variable 'a' and 'b'.",
                 "<why BLOCK-2 is wrong>": "The block is incorrect because the code does not add the two integers "
                                           "together, but instead subtracts the second integer from the first."}
FLIPS = [(" + ", " - "), (" - ", " + "), (" < ", " > "), (" > ", " < "), (" <= ", " < "), (" >= ", " > "),
         (" == ", " != "), (" != ", " == "), (" and ", " or "), (" or ", " and ")]
OUT = Path(__file__).with_name("blocks.jsonl")
COUNT = 12


def with_paper_example(prompt):
    """The shipped block prompt with the paper's example explanations (as in the JSON-schema variant before
    2026-11-25) in place of its placeholders."""
    def swap(node):
        if isinstance(node, dict):
            return {k: swap(v) for k, v in node.items()}
        for placeholder, text in PAPER_EXAMPLE.items():
            node = node.replace(placeholder, text)
        return node

    return dataclasses.replace(prompt, templates=swap(prompt.templates))


def broken(problem: dict, prefix: str, body: str, context: Context):
    """``prefix`` and the first one-operator flip of ``body`` that fails a public test, and its result."""
    for old, new in FLIPS:
        for match in re.finditer(re.escape(old), body):
            code = prefix + body[:match.start()] + new + body[match.end():]
            result = run_public_tests(problem, code, timeout=context.test_timeout)
            if 0 < result.total and result.passed < result.total:
                return code, result
    return None, None


def main() -> int:
    done = {(r["problem"], r["variant"]) for r in map(json.loads, OUT.open())} if OUT.exists() else set()
    context = Context(model="local")
    model = get_chat_model(context)
    shipped = load_prompt("critic_mcts")
    variants = {"paper example": with_paper_example(shipped), "placeholder example": shipped}
    solutions = {r["id"]: r["solution"] for r in reference_solutions("humaneval")}
    tasks = load_dataset("humaneval")
    measured = {t.id for t in select_tasks(tasks, sample=20, seed=5)}
    held_out = random.Random(13).sample([t for t in tasks if t.id not in measured], len(tasks) - len(measured))
    analysed = 0
    for task in held_out:
        if analysed == COUNT:
            break
        code, result = broken(task.problem, task.problem["prompt"], solutions[task.id], context)
        if code is None:
            continue
        trace, index = failing_test_trace(code, public_suite(task.problem), result, backend=context.sandbox)
        if index is None:
            continue
        analysed += 1
        outcome = result.outcomes[index]
        for name, prompt in variants.items():
            if (task.id, name) in done:
                continue
            reply = critic.analyze_blocks(model, prompt, task.problem, code=code, test=outcome.test.strip(),
                                          output=str(outcome.actual if outcome.actual is not None else outcome.error),
                                          trace=trace, structured=True)
            echoed = any(e in reply.raw for e in EXAMPLE)
            with OUT.open("a") as f:
                f.write(json.dumps({"problem": task.id, "variant": name, "echoed": echoed, "answer": reply.raw}) + "\n")
            print(f"{task.id:16} {name:20} echoed {echoed}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
