"""What every agent shares: the reply type, model calls with token accounting, code extraction.

An agent is role logic only: it gets the model and its prompt from the graph node that calls it,
asks, parses the answer (the papers' fallbacks when it cannot) and returns one ``Reply``.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import random
import re
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableBinding
from openai import LengthFinishReasonError

from codeforest.cost import money_spent, tokens_spent, total_cost
from codeforest.problems import Problem
from codeforest.prompts import Prompt
from codeforest.tools.cache import REPLAYED_S
from codeforest.tools.models import describe_model_failure, is_model_failure
from codeforest.tools.redaction import redact
from codeforest.tools.stopwatch import MODEL, timed

T = TypeVar("T")
_SPENT: ContextVar[list[dict] | None] = ContextVar("codeforest_spent", default=None)
_LEFT: ContextVar[int | None] = ContextVar("codeforest_tokens_left", default=None)
_WINDOW: ContextVar[int | None] = ContextVar("codeforest_window", default=None)
_COST_LEFT: ContextVar[tuple[float, dict] | None] = ContextVar("codeforest_cost_left", default=None)
_ROLE: ContextVar[str | None] = ContextVar("codeforest_role", default=None)


class Route(NamedTuple):
    """Where a role's calls go: its model, the settings its entry fixes, and its context for the per-role output
    limits (as ``counting_calls``'s ``window``: its own server's, not the search model's)."""

    model: BaseChatModel
    fixed: frozenset[str]
    window: int | None


Router = Callable[[str], "Route | None"]  # role -> its route, or None for a role without a model of its own
_ROUTER: ContextVar[Router | None] = ContextVar("codeforest_router", default=None)
CODE_TOKENS, TEXT_TOKENS = 4096, 2048  # the released CodeTree code's output limits: programs, everything else
MIN_OUTPUT_TOKENS = 256


class ModelFault(RuntimeError):
    """A model call that failed after its retries; ``spent`` is the cost of the calls made before it, ``kept``
    the part of its node's update finished before it (set by the graph kit)."""

    def __init__(self, message: str, spent: dict):
        super().__init__(message)
        self.spent = spent
        self.kept: dict = {}


class BudgetSpent(ModelFault):
    """The run's token budget (``reason`` 'token_budget') or cost budget ('cost_budget') was spent before a model
    call: the call is not made."""

    def __init__(self, message: str, spent: dict, reason: str = "token_budget"):
        super().__init__(message, spent)
        self.reason = reason


@contextlib.contextmanager
def counting_calls(tokens_left: int | None = None, window: int | None = None,
                   cost_left: tuple[float, dict] | None = None) -> Iterator[list[dict]]:
    """Record the cost of every model call made inside (so a failure does not lose what was spent); with
    ``tokens_left``, a call that would start once that many tokens are spent here raises ``BudgetSpent``, and so
    with ``cost_left`` (what may still be spent, and the price table) once that much is spent.

    ``window`` turns on the per-role output limits (4096 tokens for a program, 2048 otherwise): 0 when the
    model's context is unknown, else the context one request has (the prompt is left room in it).
    """
    ledger: list[dict] = []
    token, left, limits = _SPENT.set(ledger), _LEFT.set(tokens_left), _WINDOW.set(window)
    money = _COST_LEFT.set(cost_left)
    try:
        yield ledger
    finally:
        _SPENT.reset(token)
        _LEFT.reset(left)
        _WINDOW.reset(limits)
        _COST_LEFT.reset(money)


@contextlib.contextmanager
def routing(router: Router | None) -> Iterator[None]:
    """Inside, a call made for a role (``acts_as``) goes to the model ``router(role)`` gives, where it gives one."""
    token = _ROUTER.set(router)
    try:
        yield
    finally:
        _ROUTER.reset(token)


def acts_as(role: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Mark an agent function as one role's: its model calls go to that role's model when the run names one."""
    def mark(fn: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(fn)
        def as_role(*args, **kwargs):
            token = _ROLE.set(role)
            try:
                return fn(*args, **kwargs)
            finally:
                _ROLE.reset(token)
        as_role.role = role
        return as_role
    return mark


def _route() -> Route | None:
    role, router = _ROLE.get(), _ROUTER.get()
    return router(role) if role and router else None


def routed(model):
    """The model a call goes to: the current role's own (keeping what the caller bound, such as a seed, unless the
    role's entry fixes it), else ``model``."""
    found = _route()
    if found is None:
        return model
    own, fixed = found.model, found.fixed
    bound = dict(model.kwargs) if isinstance(model, RunnableBinding) else {}
    kept = {k: v for k, v in bound.items() if k not in fixed}
    fields = {k: v for k, v in kept.items() if k in getattr(type(own), "model_fields", {})}
    if fields:  # set on a copy, not bound, so that they survive with_structured_output
        own = own.model_copy(update=fields)
        own.__dict__.pop("_serialized", None)  # the original's cached key, which lacks them
    rest = {k: v for k, v in kept.items() if k not in fields}
    return own.bind(**rest) if rest else own


def model_name(model) -> str:
    """The name a model's calls are counted under (an endpoint's model name; a .gguf file's name)."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return name if isinstance(name, str) and name else type(model).__name__


def output_limit(msgs: list[BaseMessage], role: str, window: int) -> int:
    """The output tokens of a call: the role's limit, within what the context leaves after the prompt."""
    limit = CODE_TOKENS if role == "code" else TEXT_TOKENS
    if window <= 0:
        return limit
    prompt = sum(len(str(m.content)) for m in msgs) // 3 + 64  # about 3 characters a token, and the template
    return max(MIN_OUTPUT_TOKENS, min(limit, window - prompt))


def _limited(model, msgs: list[BaseMessage], role: str):
    route = _route()
    window = _WINDOW.get() if route is None else route.window  # a routed role's limits fit its own model
    if window is None or (route is not None and "max_tokens" in route.fixed):  # a role's own limit stands
        return model
    limit = output_limit(msgs, role, window)
    if isinstance(model, BaseChatModel) and "max_tokens" in type(model).model_fields:
        limited = model.model_copy(update={"max_tokens": limit})  # survives with_structured_output
        limited.__dict__.pop("_serialized", None)  # the original's cached key, which lacks this limit
        return limited
    return model.bind(max_tokens=limit)


def without_output_limit(model):
    """The model asking with no ``max_tokens`` (the endpoint's context is the only limit)."""
    if isinstance(model, BaseChatModel) and "max_tokens" in type(model).model_fields:
        unlimited = model.model_copy(update={"max_tokens": None})
        unlimited.__dict__.pop("_serialized", None)  # the original's cached key, which holds its limit
        return unlimited
    return model


def _check_budget() -> None:
    left, money = _LEFT.get(), _COST_LEFT.get()
    if left is None and money is None:
        return
    spent = _spent()
    if left is not None and tokens_spent(spent) >= left:
        raise BudgetSpent("the token budget is spent", spent)
    if money is not None and (money_spent(spent, money[1]) or 0.0) >= money[0]:
        raise BudgetSpent("the cost budget is spent", spent, reason="cost_budget")


def _invoke(runnable, msgs: list[BaseMessage], model: BaseChatModel):
    """One model call. The client retries 5xx, 429, time-outs and dropped connections itself (with
    backoff and jitter); a body that is not JSON gets as many retries here. A call that still fails
    raises ``ModelFault``."""
    _check_budget()
    attempts = 1 + int(getattr(model, "max_retries", 0) or 0)
    for attempt in range(attempts):
        try:
            with timed(MODEL):
                return runnable.invoke(msgs)
        except json.JSONDecodeError as exc:
            if attempt + 1 < attempts:
                time.sleep(min(8.0, 0.5 * 2 ** attempt) * random.uniform(0.5, 1.0))
                continue
            raise ModelFault(describe_model_failure(exc, model, attempts), _spent()) from exc
        except Exception as exc:
            if is_model_failure(exc):
                raise ModelFault(describe_model_failure(exc, model, attempts), _spent()) from exc
            raise


def _spent() -> dict:
    return total_cost(_SPENT.get() or [])


def _record(cost: dict) -> dict:
    ledger = _SPENT.get()
    if ledger is not None:
        ledger.append(cost)
    return cost


def record_call(cost: dict) -> dict:
    """Count a call that is not a chat-model call (e.g. a PRM endpoint) in the node's ledger; returns ``cost``."""
    return _record(cost)


def fault(message: str) -> ModelFault:
    """A ``ModelFault`` carrying everything the node has spent so far (its message redacted: it is recorded)."""
    return ModelFault(redact(message), _spent())


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


def with_system(prompt: Prompt, user: str, key: str = "system") -> list[BaseMessage]:
    """The user message, after the prompt's ``key`` system message when the prompt has one."""
    return messages(prompt.render(key), user) if prompt.has(key) else [HumanMessage(user)]


def call_model(model: BaseChatModel, msgs: list[BaseMessage], role: str = "text") -> tuple[str, dict]:
    """Invoke the model once; return its text and the cost of the call (``ModelFault`` when it fails).

    ``role`` 'code' (a program) or 'text' picks the output limit when per-role limits are on."""
    model = routed(model)
    reply = _invoke(_limited(model, msgs, role), msgs, model)
    return reply_text(reply), _record(usage_cost(reply, model_name(model)))


def call_model_choices(model: BaseChatModel, msgs: list[BaseMessage], n: int, **settings) -> tuple[list[str], dict]:
    """One request for ``n`` replies (the endpoint's ``n``; ``settings`` such as the temperature go with it): the
    texts of the replies the endpoint gave, and the call's cost."""
    from langchain_core.runnables import RunnableLambda

    route = _route()
    if route is not None:  # a role's own temperature or output limit stands over what this call sets
        settings = {k: v for k, v in settings.items() if k not in route.fixed}
    model = routed(model)
    if isinstance(model, RunnableBinding):  # what the caller bound, under what this call sets
        model, settings = model.bound, {**model.kwargs, **settings}
    result = _invoke(RunnableLambda(lambda m: model.generate([m], n=n, **settings)), msgs, model)
    choices = result.generations[0] if result.generations else []
    name = model_name(model)
    cost = usage_cost(choices[0].message, name) if choices else \
        {"llm_calls": 1, "prompt_tokens": 0, "completion_tokens": 0, "models": {name: {"llm_calls": 1}}}
    return [reply_text(c.message) for c in choices], _record(cost)


def reply_text(reply: BaseMessage) -> str:
    """The text content of a chat reply."""
    content = reply.content
    if isinstance(content, list):
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return str(content)


def usage_cost(reply: BaseMessage, model: str = "") -> dict:
    """One LLM call with the token counts the endpoint reported (a cache hit is marked as such), counted under
    ``model``'s name as well when one is given."""
    usage = (getattr(reply, "usage_metadata", None) or {}) if isinstance(reply, AIMessage) else {}
    cost = {"llm_calls": 1, "prompt_tokens": int(usage.get("input_tokens", 0)),
            "completion_tokens": int(usage.get("output_tokens", 0))}
    if model:
        cost["models"] = {model: dict(cost)}
    if usage.get("total_cost", None) == 0:  # LangChain zeroes total_cost only on a cache hit
        cost["cached_calls"] = 1
        replayed = (reply.response_metadata or {}).get(REPLAYED_S)
        if replayed:  # the seconds the call took when it was made (a cache entry of an earlier version has none)
            cost["replayed_s"] = float(replayed)
    return cost


ANSWER_FORMAT = "answer_format"


def render_formatted(prompt: Prompt, key: str, formats: str, structured: bool, **values: object) -> tuple[str, bool]:
    """Template ``key`` with its answer-format instruction filled in; and whether to decode with the schema.

    A template marks where its format instruction goes with ``{answer_format}``; ``<formats>.text`` is the
    paper's wording and ``<formats>.structured`` the same request in the schema's shape, so the instruction
    and the decoder agree. A template without the placeholder (a user's file in the old shape) states its
    own format: it is sent as written and answered without a schema, which would contradict it.
    """
    if not prompt.uses(key, ANSWER_FORMAT):
        return prompt.render(key, **values), False
    schema = structured and prompt.has(f"{formats}.structured")
    instruction = prompt.render(f"{formats}.{'structured' if schema else 'text'}", **values)
    return prompt.render(key, **{**values, ANSWER_FORMAT: instruction}), schema


def structured_call(model: BaseChatModel, msgs: list[BaseMessage], schema: dict,
                    enabled: bool = True) -> tuple[dict | None, str, dict]:
    """Ask for an answer constrained by a JSON schema where the endpoint supports it.

    Returns (parsed object or None, raw text, cost). With ``enabled`` False, or a model that cannot
    constrain its output, it is one plain call and the caller parses the text (the papers' fallbacks).
    """
    model = routed(model)
    if enabled:
        try:
            runnable = _limited(model, msgs, "text").with_structured_output(schema, method="json_schema",
                                                                            include_raw=True)
        except (NotImplementedError, ValueError, TypeError):
            runnable = None
        if runnable is not None:
            try:
                out = _invoke(runnable, msgs, model)
            except LengthFinishReasonError as exc:  # the client refuses to parse a reply cut off at its limit
                keep_unreturned(model, msgs, exc)
                return None, truncated_text(exc), _record(truncated_cost(exc, model_name(model)))
            raw = out["raw"]
            # a reply cut off at its limit, found in the cache, is read as it was when made: unparsed
            parsed = None if (raw.response_metadata or {}).get("finish_reason") == "length" else out.get("parsed")
            return (parsed if isinstance(parsed, dict) else None), reply_text(raw), \
                _record(usage_cost(raw, model_name(model)))
    text, cost = call_model(model, msgs)
    return None, text, cost


def keep_unreturned(model, msgs: list[BaseMessage], exc: LengthFinishReasonError) -> None:
    """Store a schema-constrained reply cut off at its output limit in the model's response cache, as LangChain
    stores every reply it is handed: the client raised instead, so a replay of the run would ask the call again."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    store = getattr(getattr(model, "cache", None), "store_unreturned", None)
    create = getattr(model, "_create_chat_result", None)
    if store is None or create is None:
        return
    result = create(exc.completion)
    for generation in result.generations:  # the response metadata LangChain gives a reply before caching it
        generation.message.response_metadata = {**(result.llm_output or {}), **(generation.generation_info or {}),
                                                **generation.message.response_metadata}
    # the prompt as LangChain keys it: the messages without their ids
    store(dumps([m.model_copy(update={"id": None}) if m.id is not None else m for m in msgs]), result.generations)


def truncated_text(exc: LengthFinishReasonError) -> str:
    """The text of a schema-constrained reply that ran into its output limit (left to the caller's parse)."""
    choices = exc.completion.choices
    return (choices[0].message.content or "") if choices else ""


def truncated_cost(exc: LengthFinishReasonError, model: str = "") -> dict:
    """The cost of that reply, from the usage the endpoint reported (counted under ``model`` as well)."""
    usage = exc.completion.usage
    cost = {"llm_calls": 1, "prompt_tokens": int(usage.prompt_tokens) if usage else 0,
            "completion_tokens": int(usage.completion_tokens) if usage else 0}
    return {**cost, "models": {model: dict(cost)}} if model else cost


# A fenced block of any language (its closing fence is consumed with it, so a ```json block's end never reads as the
# opening of a python one), or one the reply's end cut off.
_FENCE = re.compile(r"```[ \t]*([^\n`]*?)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
PYTHON_FENCES = ("", "python", "python3", "py")


def extract_code(text: str, entry_point: str | None = None) -> str | None:
    """The program in a reply: the python (or unlabelled) fenced block defining the entry point (else the longest),
    or bare code."""
    blocks = [b.strip("\n") for lang, b in _FENCE.findall(text) if lang.lower() in PYTHON_FENCES and b.strip()]
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


def released_python_code(text: str) -> str | None:
    """The program as the released RPM-MCTS reads a reply (``extract_python_code``): the first closed ```python
    block, stripped; None when there is none (the released code then runs the whole reply)."""
    match = re.search(r"```python(.*?)```", text, re.DOTALL)
    return match.group(1).strip() if match else None


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
