"""What every agent shares: the reply type, model calls with token accounting, code extraction.

An agent is role logic only: it gets the model and its prompt from the graph node that calls it,
asks, parses the answer (the papers' fallbacks when it cannot) and returns one ``Reply``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from codeforest.problems import Problem

T = TypeVar("T")


@dataclass
class Reply(Generic[T]):
    """An agent's answer: what it means, the raw text, the cost, and whether it was read or is the fallback.

    ``value`` is the program, the list of ideas, the score or verdict ...; when ``parsed`` is False it is
    the paper's fallback and the cost counts one parse failure. ``analysis`` is a judgement's reasoning.
    """

    value: T
    raw: str
    cost: dict
    parsed: bool = True
    analysis: str = ""

    def __post_init__(self) -> None:
        if not self.parsed:
            self.cost = {**self.cost, "parse_failures": 1}


def messages(system: str, user: str) -> list[BaseMessage]:
    """A system + user message pair."""
    return [SystemMessage(system), HumanMessage(user)]


def call_model(model: BaseChatModel, msgs: list[BaseMessage]) -> tuple[str, dict]:
    """Invoke the model once; return its text and the cost of the call."""
    reply = model.invoke(msgs)
    return reply_text(reply), usage_cost(reply)


def reply_text(reply: BaseMessage) -> str:
    """The text content of a chat reply."""
    content = reply.content
    if isinstance(content, list):
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return str(content)


def usage_cost(reply: BaseMessage) -> dict:
    """One LLM call with the token counts the endpoint reported (a cache hit is marked as such)."""
    usage = (getattr(reply, "usage_metadata", None) or {}) if isinstance(reply, AIMessage) else {}
    cost = {"llm_calls": 1, "prompt_tokens": int(usage.get("input_tokens", 0)),
            "completion_tokens": int(usage.get("output_tokens", 0))}
    if usage.get("total_cost", None) == 0:  # LangChain zeroes total_cost only on a cache hit
        cost["cached_calls"] = 1
    return cost


def structured_call(model: BaseChatModel, msgs: list[BaseMessage], schema: dict,
                    enabled: bool = True) -> tuple[dict | None, str, dict]:
    """Ask for an answer constrained by a JSON schema where the endpoint supports it.

    Returns (parsed object or None, raw text, cost). With ``enabled`` False, or a model that cannot
    constrain its output, it is one plain call and the caller parses the text (the papers' fallbacks).
    """
    if enabled:
        try:
            runnable = model.with_structured_output(schema, method="json_schema", include_raw=True)
        except (NotImplementedError, ValueError, TypeError):
            runnable = None
        if runnable is not None:
            out = runnable.invoke(msgs)
            raw = out["raw"]
            parsed = out.get("parsed")
            return (parsed if isinstance(parsed, dict) else None), reply_text(raw), usage_cost(raw)
    text, cost = call_model(model, msgs)
    return None, text, cost


_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def extract_code(text: str, entry_point: str | None = None) -> str | None:
    """The program in a reply: the fenced block defining the entry point (else the longest), or bare code."""
    blocks = [b.strip("\n") for b in _FENCE.findall(text) if b.strip()]
    if blocks:
        if entry_point:
            defining = [b for b in blocks if re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", b, re.M)]
            if defining:
                return max(defining, key=len)
        return max(blocks, key=len)
    stripped = text.strip()
    if stripped and _parses(stripped):
        return stripped
    return None


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def assemble_program(problem: Problem, code: str) -> str:
    """Make a function-style answer runnable: add the prompt's imports, or the signature for a bare body."""
    if problem["kind"] != "function":
        return code
    entry = problem["entry_point"] or ""
    defines_entry = re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, re.M) is not None
    if entry and not defines_entry and code.startswith((" ", "\t")):
        return problem["prompt"] + code  # the model completed the body only
    imports = [ln for ln in problem["prompt"].splitlines()
               if re.match(r"(import|from)\s+\w", ln) and ln.strip() not in code]
    return "\n".join(imports + [code]) if imports else code
