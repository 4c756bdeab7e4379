"""Solver: writes a complete program from the problem and, optionally, a hint (strategy or thoughts)."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from codeforest.agents.base import (
    Reply,
    acts_as,
    assemble_program,
    call_model,
    extract_code,
    released_python_code,
    with_system,
)
from codeforest.problems import Problem
from codeforest.prompts import Prompt


@acts_as("solver")
def write_code(model: BaseChatModel, prompt: Prompt, problem: Problem, hint: str | None = None,
               thoughts: str | None = None, shown: str | None = None, released: bool = False) -> Reply[str]:
    """Ask the model for a full program from the problem and a hint (CodeTree) or thoughts (the MCTS graphs).

    The user template may differ by problem kind (``user.function``); the system message is optional.
    ``shown`` replaces the problem's prompt in the message (e.g. with its public tests appended).
    Falls back to the reply text when it holds no code block. ``released``: the program as the released RPM-MCTS
    reads it (``released_python_code``, nothing added), else the whole reply.
    """
    kind, text = problem["kind"], shown or problem["prompt"]
    if thoughts is not None:
        name = f"user_with_thoughts.{kind}" if prompt.has(f"user_with_thoughts.{kind}") else "user_with_thoughts"
        user = prompt.render(name, problem=text, thoughts=thoughts)
    elif hint:
        user = prompt.render("user_with_hint", problem=text, hint=hint)
    else:
        user = prompt.render(f"user.{kind}" if prompt.has(f"user.{kind}") else "user", problem=text)
    raw, cost = call_model(model, with_system(prompt, user, f"system.{kind}"), role="code")  # BESTER's has none
    if released:
        code = released_python_code(raw)
        return Reply(raw if code is None else code, raw, cost, parsed=code is not None)
    return program_reply(problem, raw, cost)


def program_reply(problem: Problem, raw: str, cost: dict) -> Reply[str]:
    """The runnable program in a code-writing reply; without a code block, the reply itself (counted)."""
    code = extract_code(raw, problem.get("entry_point"))  # None: the paper's fallback, the reply as it is
    return Reply(assemble_program(problem, raw if code is None else code), raw, cost, parsed=code is not None)


def own_program(problem: Problem, raw: str) -> str:
    """The program a code-writing reply holds as the model wrote it, before the prompt's imports are added; without
    a code block, the reply itself (the paper's fallback: run as it is, it fails its tests visibly)."""
    code = extract_code(raw, problem.get("entry_point"))
    return raw if code is None else code
