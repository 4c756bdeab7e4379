"""The tree kit every search graph is built from.

One definition each of: the run's settings (``settings``), the chat model and prompts a node gives its
agent, progress events (``emit``), creating a node (one id scheme), "this program passes the public
tests" (one rule), running a node's program, choosing the final program, the common output, the start
of a run (input validation and a clean tree on a reused thread), the Verifier a run uses with its
flagging and aggregation rules, and the wiring helpers.

Ids: the MCTS root is ``root`` (order 0); every other node is ``n<order>``, its creation order from 1.
Public tests: a program passes only when the problem has public tests and it passes all of them. A
problem without public tests is never reported as passing: ``public_pass_rate`` is ``None``, the
program's status is ``unverified`` and so is the stop reason. How a method searches such a problem is
its own rule (its paper or released code), decided in its graph file.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar, copy_context
from functools import partial
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langgraph.config import get_config, get_stream_writer
from langgraph.errors import NodeError
from langgraph.graph import StateGraph
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Command, Overwrite

from codeforest.agents import critic
from codeforest.agents.base import BudgetSpent, ModelFault, Reply, Route, Router, counting_calls, routing
from codeforest.context import Context, environment_roles
from codeforest.cost import add_cost, money_spent, price_of, tokens_spent
from codeforest.graphs.state import Execution, NodeRecord, SearchInput, SearchOutput, SearchState, merge_nodes
from codeforest.graphs.verdicts import remembered
from codeforest.model_names import counted_name
from codeforest.problems import Problem, public_suite, validate_problem
from codeforest.prompts import Prompt, check_prompts_dir, load_prompt
from codeforest.suites import ExecutionResult, TestOutcome
from codeforest.tools.released_exec import released_failed_texts
from codeforest.tools.sandbox import run_public_tests
from codeforest.tools.testing import feedback_text
from codeforest.tools.tracing import failing_test_trace

log = logging.getLogger("codeforest")
C = TypeVar("C", bound=Context)
ROOT = "root"
STEP_LIMIT = "step_limit"  # the stop reason when the caller's recursion limit ends a search early
UNVERIFIED = "unverified"
TOKEN_BUDGET = "token_budget"  # the stop reason (and the ``model_error`` mark) once the token budget is spent
COST_BUDGET = "cost_budget"  # the same once the cost budget is spent
BUDGETS = (TOKEN_BUDGET, COST_BUDGET)
MIN_RECURSION_LIMIT = 6  # start, a first program (or none), finalize, select_final: every graph's shortest run
# Sync nodes run here under ainvoke/astream: LangGraph would use the event loop's default executor,
# min(32, cpus + 4) threads, which caps Send fan-out at 6 on a 2-core machine. ``max_concurrency`` in
# the run's config still bounds it.
_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="codeforest-node")
_KEPT: ContextVar[dict | None] = ContextVar("codeforest_kept", default=None)
PROGRAM_RUN = {"programs": 1, "sandbox_runs": 1}  # the cost of a program written and run, besides its model call


# --- settings, model, prompts, events -----------------------------------------------------------

def settings(runtime: Runtime | None, cls: type[C]) -> C:
    """The run's context as the graph's own class (from that class, a dict, another context or none).

    A graph given its context directly gets it checked by LangGraph (unknown keys fail); inside a parent
    graph it may see the parent's context, whose other keys are not its business.
    """
    raw = getattr(runtime, "context", None)
    if isinstance(raw, dict):
        raw = {k: v for k, v in raw.items() if k in cls.model_fields}
    return cls.of(raw)


def chat_model(context: Context, override: BaseChatModel | None = None) -> BaseChatModel:
    """The model an agent talks to: the graph's injected one (library use, tests) or the context's."""
    if override is not None:
        return override
    from codeforest.tools.models import get_chat_model

    return get_chat_model(context)


def role_router(context: Context) -> Router | None:
    """The models of the roles the run names one for (``Context.role_entries``): each role's calls go to its own
    (and what its entry fixes, its temperature or output limit, stays so); None when no role has one."""
    entries = context.role_entries()
    if not entries:
        return None

    def route(role: str) -> Route | None:
        entry = entries.get(role)
        if entry is None:
            return None
        fixed = frozenset(k for k in ("temperature", "max_tokens") if getattr(entry, k) is not None)
        own = context.role_context(role)
        return Route(chat_model(own), fixed, output_window(own))

    return route


def prompt(context: Context, name: str) -> Prompt:
    """A role's prompt, from the context's prompts folder where it has that file."""
    return load_prompt(name, context.prompts_dir or None)


def emit(event: str, **data: Any) -> None:
    """Send a progress event on the custom stream (ignored when nobody listens)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a graph run
        return
    writer({"event": event, **data})


# --- nodes and programs ---------------------------------------------------------------------------

def next_order(*tables: dict[str, NodeRecord]) -> int:
    """The creation order of the next node over the given tables; 1 in an empty tree (the root is 0)."""
    orders = [n.get("order", 0) for table in tables for n in table.values()]
    return max(orders) + 1 if orders else 1


def new_node(order: int, *, parent: NodeRecord | None, kind: str, announce: bool = True,
             **fields: Any) -> NodeRecord:
    """A new open node ``n<order>`` below ``parent`` (``order`` from ``next_order``, plus a branch's offset)."""
    node: NodeRecord = {"id": f"n{order}", "parent": parent["id"] if parent else None,
                        "depth": parent.get("depth", 0) + 1 if parent else 1, "kind": kind, "order": order,
                        "status": "open", **fields}
    if announce:
        emit("node_created", node=node["id"], parent=node["parent"], depth=node["depth"],
             text=node.get("text", ""), **({"prior": node["prior"]} if "prior" in node else {}))
    return node


def root_node(visits: int = 0) -> NodeRecord:
    """The root of an MCTS tree: no program, no thought (``visits``: the method's initial count)."""
    return {"id": ROOT, "parent": None, "depth": 0, "kind": "root", "text": "", "visits": visits, "q": 0.0,
            "status": "open", "order": 0}


def passes_public(execution: Execution | ExecutionResult | None) -> bool:
    """The one rule: there are public tests and the program passes every one of them."""
    if isinstance(execution, ExecutionResult):
        return execution.all_passed
    execution = execution or {}
    return execution.get("total", 0) > 0 and execution.get("passed", 0) == execution["total"]


def fails_public(execution: Execution | None) -> bool:
    """There are public tests and the program fails at least one (no public tests: nothing can fail)."""
    execution = execution or {}
    return execution.get("total", 0) > 0 and execution.get("passed", 0) < execution["total"]


def enough_passing(nodes: dict[str, NodeRecord], context: Context) -> bool:
    """The tree holds ``min_candidates`` distinct programs passing every public test (a search may stop); on a
    problem without public tests, where none can pass, that many distinct programs (each unverified)."""
    tested = [n for n in nodes.values() if n.get("code") and n.get("execution")]
    if tested and not any(n["execution"].get("total") for n in tested):
        found = {n["code"] for n in tested}
    else:
        found = {n["code"] for n in tested if passes_public(n["execution"])}
    return len(found) >= context.min_candidates


def wants_more(nodes: dict[str, NodeRecord], context: Context) -> bool:
    """A search that would stop at a public-passing program goes on: ``min_candidates`` is above 1 and the
    tree holds fewer distinct passing programs than that."""
    return context.min_candidates > 1 and not enough_passing(nodes, context)


def public_pass_rate(execution: Execution | None) -> float | None:
    """The share of public tests passed; ``None`` when there are none (the program is unverified)."""
    execution = execution or {}
    return execution["passed"] / execution["total"] if execution.get("total") else None


def released_failed(problem: Problem, reply: str, result: ExecutionResult, context: Context, *, label: str,
                    cap: int | None = None) -> list[str]:
    """A function problem's failing tests as the released HumanEval executor lists them
    (``released_failed_texts``), kept for the run as its verdict is: the released code keeps a reply's feedback with
    its reward (``cached_verbal_feedback``), so a reply written again is not run again."""
    key = ("released failures", reply, label, cap, context.test_timeout, context.sandbox)
    return list(remembered(problem, key, lambda: released_failed_texts(
        reply, result, problem["entry_point"], label=label, limit=context.test_timeout, backend=context.sandbox,
        cap=cap)))


def program_status(execution: Execution | ExecutionResult) -> str:
    """``passed`` / ``failed`` on the public tests, or ``unverified`` when there are none."""
    total = execution.total if isinstance(execution, ExecutionResult) else execution.get("total", 0)
    return "unverified" if not total else "passed" if passes_public(execution) else "failed"


def run_program(problem: Problem, code: str, context: Context, node_id: str,
                feedback: Callable[[ExecutionResult], str] = feedback_text,
                budget: float | None = None, judged: str | None = None) -> tuple[ExecutionResult, dict]:
    """Run a node's program on the public tests in the sandbox (``budget``: the whole run's seconds, if any); the
    result and the node fields it sets. ``judged``: the text the tests run instead, when the verdict is a released
    executor's reading of the reply (the node keeps ``code``). A program this run already ran is not run again: its
    verdict is kept (``graphs.verdicts``)."""
    judged = code if judged is None else judged
    result = remembered(problem, ("public tests", judged, context.test_timeout, context.sandbox, budget),
                        lambda: run_public_tests(problem, judged, timeout=context.test_timeout,
                                                 backend=context.sandbox, budget=budget))
    emit("executed", node=node_id, passed=result.passed, total=result.total)
    return result, {"code": code, "execution": result.summary(), "feedback": feedback(result),
                    "status": program_status(result)}


def kept_reply(raw: str, code_shown: str) -> dict:
    """The node field keeping the Solver's whole reply, when later prompts show it (``code_shown='reply'``)."""
    return {"reply": raw} if code_shown == "reply" else {}


def shown_code(node: dict, code_shown: str) -> str:
    """The code later prompts show for a node: its program, or the Solver's whole reply (``code_shown='reply'``)."""
    return node.get("reply", node["code"]) if code_shown == "reply" else node["code"]


def analyze_failure(problem: Problem, code: str, result: ExecutionResult, context: Context,
                    model: BaseChatModel, prompt_name: str = "critic_mcts") -> tuple[str, Reply | None]:
    """The block-level trace of the first failing public test and the LLM's judgement of each block (LDB).

    Returns the trace text and the Critic's reply; without a trace (it failed or timed out) the text is the
    plain "expected X, got Y" fallback and there is no reply (no model call).
    """
    trace, reply, _ = traced_failure(problem, code, result, context, model, prompt_name=prompt_name)
    return trace, reply


def traced_failure(problem: Problem, code: str, result: ExecutionResult, context: Context, model: BaseChatModel,
                   show: Callable[[TestOutcome], str] = lambda o: o.test.strip(), prompt_name: str = "critic_mcts",
                   ) -> tuple[str, Reply | None, TestOutcome | None]:
    """``analyze_failure`` and the failing test it traced (None without a trace); ``show`` writes the test
    into the analysis prompt, ``prompt_name`` holds its ``blocks`` template."""
    trace, index = failing_test_trace(code, public_suite(problem), result, backend=context.sandbox)
    if index is None:
        return trace, None, None
    outcome = result.outcomes[index]
    shown = outcome.actual if outcome.actual is not None else outcome.error
    return trace, critic.analyze_blocks(model, prompt(context, prompt_name), problem, code=code,
                                        test=show(outcome), output=str(shown), trace=trace,
                                        structured=context.structured_output), outcome


def best(candidates: Iterable[dict], key: Callable[[dict], Any]) -> dict | None:
    """The candidate with the highest ``key``; ties go to the earliest (list order)."""
    chosen = None
    for candidate in candidates:
        if chosen is None or key(candidate) > key(chosen):
            chosen = candidate
    return chosen


def finish(state: SearchState, node_id: str | None, code: str, execution: Execution | None, reason: str) -> dict:
    """The common output for the chosen program.

    A failed model call makes the stop reason ``model_error`` (with the message in ``error``), a spent token
    budget ``token_budget``; a problem without public tests ends ``unverified``. The ``finished`` event also
    carries the search's own reason.
    """
    error = state.get("model_error")
    if error in BUDGETS:
        reason, error = error, None
    elif error:
        reason = "model_error"
    shown = UNVERIFIED if not state["problem"].get("public_tests") and not error else reason
    emit("finished", node=node_id, stop_reason=shown, search_reason=reason)
    return {"final_code": code or "", "final_node": node_id, "stop_reason": shown,
            "public_pass_rate": public_pass_rate(execution), "error": error}


def finish_node(state: SearchState, node_id: str | None, reason: str) -> dict:
    """The common output for a node of the tree (``None``: no program)."""
    node = state.get("nodes", {}).get(node_id or "", {})
    return finish(state, node_id, node.get("code", ""), node.get("execution"), reason)


# --- the run ----------------------------------------------------------------------------------------

def steps_left(state: dict) -> int:
    """Nodes that can still run after the current one before the caller's recursion limit (the final selection's
    step kept aside)."""
    return state.get("remaining_steps", 10**9) - 2


def roles_called(context: Context, graph_roles: Iterable[str], choices: bool = True) -> set[str]:
    """The roles a run makes calls for: its graph's (under its settings), and, when the search can end with more
    than one program to choose from (``choices``), the selector's Tester (a selector other than 'public' that asks
    for inputs) and judge ('differential' with inputs to compare on)."""
    called = set(graph_roles)
    if choices and context.selector != "public" and context.tester_inputs:
        called.add("tester")
    if choices and context.selector == "differential" and (context.tester_inputs or context.mutated_inputs):
        called.add("judge")
    return called


def check_roles(context: Context, called: set[str]) -> None:
    """Refuse a ``roles`` entry for a role this run never calls (a typo, a role of another graph, or one its
    settings leave out), by name. An entry the environment gives (``CODEFOREST_ROLES``) serves every graph a
    server runs, each graph using those it calls: it is not refused here."""
    given = environment_roles() or {}
    idle = sorted(role for role, entry in context.roles.items() if role not in called and given.get(role) != entry)
    if idle:
        raise ValueError(f"roles names {', '.join(idle)}, which this run never calls; the roles it calls: "
                         f"{', '.join(sorted(called))}")


def check_prices(context: Context) -> None:
    """Under a ``cost_budget``, refuse a run whose models are not all priced, by name, before any call."""
    if not context.cost_budget:
        return
    names = {counted_name(run.model, run.base_url) for run in context.model_contexts()}
    missing = sorted(name for name in names if price_of(name, context.prices) is None)
    if missing:
        raise ValueError(f"cost_budget needs a price for {', '.join(missing)}: give one in prices "
                         "(--price MODEL=IN,OUT or --prices FILE), per million input and output tokens")


def starter(fresh: dict, needed: Callable[[Any], int], context_cls: type[C],
            roles: Callable[[Any], set[str]] = lambda context: set()) -> Callable:
    """The first node of a graph: check the problem and the prompt folder; start from a clean tree and cost.

    ``fresh`` gives every method-specific state field its initial value (``Overwrite`` for a field with a
    reducer), so a run on a reused
    checkpointer thread never sees the previous run's search. ``needed(context)`` is the recursion
    limit the budget needs; a lower one is respected (the search ends early with ``step_limit``). A ``roles``
    entry for a role outside ``roles(context)`` (the roles the graph calls under these settings) is refused.
    """

    def start(state: SearchState, runtime: Runtime) -> dict:
        """Check the problem (keeping only what a graph may see) and the recursion limit; reset the tree, the
        cost and the outcome."""
        problem = validate_problem(state.get("problem"))
        context = settings(runtime, context_cls)
        if context.prompts_dir:
            check_prompts_dir(context.prompts_dir)
        check_roles(context, roles(context))
        check_prices(context)
        limit = get_config().get("recursion_limit")
        if limit is not None and limit < MIN_RECURSION_LIMIT:
            raise ValueError(f"recursion_limit={limit} is too low: a search needs at least {MIN_RECURSION_LIMIT} "
                             f"steps to return a program, and {needed(context)} for this budget")
        if limit is not None and limit < needed(context):
            message = (f"recursion_limit={limit} is below the {needed(context)} steps this budget needs: the "
                       f"search will stop early with stop_reason '{STEP_LIMIT}'")
            log.warning(message)
            emit("warning", message=message)
        return {"problem": problem, "nodes": Overwrite({}), "cost": Overwrite({}), "final_code": "", "final_node": None,
                "stop_reason": "", "public_pass_rate": None, "error": None, "model_error": None, "selection": None,
                **copy.deepcopy(fresh)}

    return start


def run_inner(graph: Runnable, graph_input: dict, config: dict | None = None, **kwargs: Any) -> dict:
    """Run a graph inside a node: its final state, with its progress events passed on to the caller's stream."""
    final: dict = {}
    for mode, chunk in graph.stream(graph_input, config, stream_mode=["custom", "values"], **kwargs):
        if mode == "custom":
            emit(**chunk)
        else:
            final = chunk
    return final


def builder(state: type, context: type[Context]) -> StateGraph:
    """A StateGraph with the common input and output and the method's own state and context."""
    return StateGraph(state, context_schema=context, input_schema=SearchInput, output_schema=SearchOutput)


def add_nodes(graph: StateGraph, nodes: dict[str, Callable], model: BaseChatModel | None = None,
              on_model_fault: str = "finalize") -> None:
    """Add node functions by name; ``model`` goes to every function that takes a ``model`` argument.

    Such a model-calling node keeps the cost of its calls, and when a call fails after its retries
    (``ModelFault``) its error handler records the message and that cost and goes to
    ``on_model_fault`` (``finalize``; ``END`` in a subgraph), so the search ends with its best program
    so far. Each node also gets an async form that runs it in the kit's thread pool, so
    ``ainvoke``/``astream`` never block the event loop and fan out as wide as ``max_concurrency`` allows.
    """
    for name, fn in nodes.items():
        handler = None
        if "model" in inspect.signature(fn).parameters:
            fn = _counted(partial(fn, model=model), graph.context_schema or Context)
            handler = partial(_model_fault, goto=on_model_fault)
        graph.add_node(name, Node(fn, name), error_handler=handler)


def with_context(fn: Callable, cls: type[Context]) -> Callable:
    """``fn`` (a node or router taking ``runtime``) run with its context read as ``cls``: a preset graph (a
    subclass with other defaults) reuses another graph's nodes, and they see the preset's defaults."""
    if "runtime" not in inspect.signature(fn).parameters:
        return fn

    def wrapped(state, *args, **kwargs):
        if kwargs.get("runtime") is not None:
            kwargs["runtime"] = kwargs["runtime"].override(context=settings(kwargs["runtime"], cls))
        return fn(state, *args, **kwargs)

    wrapped.__signature__ = inspect.signature(fn)
    wrapped.__name__ = getattr(fn, "__name__", "node")
    return wrapped


def _counted(fn: Callable, cls: type[Context]) -> Callable:
    def node(state, **injected):  # LangGraph injects what ``fn`` declares (runtime ...)
        runtime = injected.get("runtime")
        token = _KEPT.set({})
        context = settings(runtime, cls)  # read once for the node's budgets, output limits and roles
        run = context if runtime is not None else None  # budgets and roles come with a run's context only
        try:
            with counting_calls(tokens_left(state, run), output_window(context), cost_left(state, run)), \
                    routing(role_router(run) if run is not None else None):
                return fn(state, **injected)
        except ModelFault as fault:
            fault.kept = _KEPT.get()
            raise
        finally:
            _KEPT.reset(token)

    node.__signature__ = inspect.signature(fn)
    return node


def spent_so_far(state: dict) -> dict:
    """What the run has spent: the state's cost, and in a subgraph what its parent had spent before it
    (``spent_before``)."""
    return add_cost(state.get("cost"), state.get("spent_before"))


def tokens_left(state: dict, context: Context | None) -> int | None:
    """Tokens the run may still spend before its next model call (``None``: no ``token_budget``)."""
    if context is None or not context.token_budget:
        return None
    return context.token_budget - tokens_spent(spent_so_far(state))


def cost_left(state: dict, context: Context | None) -> tuple[float, dict] | None:
    """What the run may still spend in the price unit before its next model call, and the price table
    (``None``: no ``cost_budget``)."""
    if context is None or not context.cost_budget:
        return None
    return context.cost_budget - (money_spent(spent_so_far(state), context.prices) or 0.0), context.prices


def output_window(context: Context) -> int | None:
    """The context one request has when per-role output limits apply (``max_tokens`` 0): the embedded
    server's ``n_ctx`` (it holds that much per slot), or 0 for an endpoint (unknown); ``None`` when
    ``max_tokens`` is set."""
    if context.max_tokens:
        return None
    return 0 if context.base_url else context.n_ctx


def keep(part: dict) -> None:
    """Hold a finished part of the running node's update (a program written and run, say), so that a model call
    failing later in the same node, or the token budget running out there, does not lose it: the search ends
    with it. Parts add up: node records merge by id, lists extend, costs add (give only what no model call
    counts, e.g. ``PROGRAM_RUN``), anything else is replaced."""
    kept = _KEPT.get()
    if kept is None:  # not inside a model-calling node
        return
    for key, value in part.items():
        if key == "nodes":
            kept[key] = merge_nodes(kept.get(key), value)
        elif key == "cost":
            kept[key] = add_cost(kept.get(key), value)
        elif isinstance(value, list):
            kept[key] = [*kept.get(key, []), *value]
        else:
            kept[key] = value


def _model_fault(state: dict, error: NodeError, goto: str) -> Command:
    """The error handler of a model-calling node: a model fault (or the token budget, spent) ends the search
    with what the node had finished (``keep``); anything else fails the run."""
    fault = error.error
    if not isinstance(fault, ModelFault):
        raise fault
    if isinstance(fault, BudgetSpent):
        mark = fault.reason
        emit(mark, node=error.node)
    else:
        mark = str(fault)
        emit("model_error", node=error.node, error=mark)
    update = {**fault.kept, "model_error": mark, "cost": add_cost(fault.spent, fault.kept.get("cost"))}
    return Command(update=update, goto=goto)


def failed(state: dict) -> bool:
    """True once a model call failed for good or the token budget is spent: every router heads for the end."""
    return bool(state.get("model_error"))


class Node(Runnable):
    """A node function as LangGraph runs it: as is under ``invoke``/``stream``, and in the kit's thread pool under
    ``ainvoke``/``astream``; it gets the run's ``runtime`` when it declares one, as a plain function would."""

    def __init__(self, fn: Callable, name: str):
        self.fn, self.name = fn, name
        self.takes_runtime = "runtime" in inspect.signature(fn).parameters

    def invoke(self, input: Any, config: dict | None = None, **kwargs: Any) -> Any:
        """Run the node function on the state."""
        if self.takes_runtime and "runtime" not in kwargs:
            kwargs["runtime"] = get_runtime()
        return self.fn(input, **kwargs)

    async def ainvoke(self, input: Any, config: dict | None = None, **kwargs: Any) -> Any:
        """Run the node function in the kit's pool, so the event loop never blocks."""
        call = partial(copy_context().run, self.invoke, input, config, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(_POOL, call)


def recursion_limit(nodes: int) -> int:
    """The recursion limit that lets ``nodes`` nodes run one after another, then the final selection (LangGraph
    counts the input), never below what any search needs (``MIN_RECURSION_LIMIT``)."""
    return max(MIN_RECURSION_LIMIT, nodes + 2)
