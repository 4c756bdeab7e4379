"""Debugger: a refined program from a node's code, its execution feedback and one reflection."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from codeforest.agents.base import Reply, acts_as, call_model
from codeforest.agents.solver import program_reply
from codeforest.problems import Problem
from codeforest.prompts import Prompt

REVIEW_MARK = "[additional review]:"


@acts_as("debugger")
def repair(model: BaseChatModel, prompt: Prompt, problem: Problem, *, code: str, feedback: str,
           reflection: str, review: bool = False) -> Reply[str]:
    """The Reflexion-style multi-turn repair; the Critic's review is stripped from the feedback unless ``review``."""
    if not review:
        feedback = feedback.split(REVIEW_MARK)[0].strip()
    msgs = [
        SystemMessage(prompt.render(f"system.{problem['kind']}")),
        HumanMessage(prompt.render("challenge", problem=problem["prompt"])),
        AIMessage(prompt.render("previous", code=code)),
        HumanMessage(prompt.render("results", feedback=feedback)),
        AIMessage(prompt.render("reflection", reflection=reflection)),
        HumanMessage(prompt.render("improve")),
    ]
    raw, cost = call_model(model, msgs, role="code")
    return program_reply(problem, raw, cost)


@acts_as("debugger")
def repair_from_reflection(model: BaseChatModel, prompt: Prompt, problem: Problem, *, code: str,
                           reflection: str) -> Reply[str]:
    """BESTER's repair: the original query, the program as the model's answer, then the reflection.

    The failing tests are not shown: they reach the repair only through the reflection (SPEC §2.2).
    """
    kind = problem["kind"]
    msgs = [
        HumanMessage(prompt.render(f"query.{kind}", problem=problem["prompt"])),
        AIMessage(prompt.render("previous", code=code)),
        HumanMessage(prompt.render(f"repair.{kind}", problem=problem["prompt"], reflection=reflection)),
    ]
    if prompt.has(f"system.{kind}"):
        msgs.insert(0, SystemMessage(prompt.render(f"system.{kind}")))
    raw, cost = call_model(model, msgs, role="code")
    return program_reply(problem, raw, cost)
