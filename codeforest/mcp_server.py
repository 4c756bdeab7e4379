"""Every registered graph as a tool of an MCP server over stdio: ``codeforest mcp``.

A tool takes a problem (a prompt, the function its tests call, its public tests) and optional settings, runs the
graph of its name, and returns the program with its public-test verdict. Needs the ``mcp`` extra.
"""

# no `from __future__ import annotations`: each tool's signature is built at run time (its settings' names) and
# the MCP SDK reads the annotations as objects
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

import anyio.from_thread
from mcp.server.mcpserver import Context as ToolContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from codeforest.api import solve
from codeforest.cli import one_line, user_errors
from codeforest.cli.solve import describe_event
from codeforest.context import Context
from codeforest.cost import money_spent, per_model_text
from codeforest.problems import Problem, StdioTest, docstring_tests, validate_problem
from codeforest.registry import context_for, graph_module, graph_names, run_context
from codeforest.tools.redaction import redact

INSTRUCTIONS = ("Each tool is one code-generation method (direct is a single model call, the others search); it "
                "writes a Python program for a problem, runs it on the public tests in a sandbox and returns the "
                "program with the verdict. Give a function's signature and docstring as the prompt with its "
                "entry_point and assert tests, or a statement read from stdin with input/output tests.")


class Solution(TypedDict):
    """A tool's result: the program and how it did on the public tests."""

    program: str
    summary: str
    stop_reason: str | None
    public_passed: int | None
    public_total: int | None
    error: str | None
    cost: dict[str, float]
    models: dict[str, dict[str, int]]
    spent: float | None


def build_server(defaults: dict | None = None) -> MCPServer:
    """The server with one tool per registered graph; every call's settings start from ``defaults`` (a ``roles``
    entry there reaches the calls whose graph calls that role under the call's settings)."""
    server = MCPServer("codeforest", instructions=INSTRUCTIONS, log_level="WARNING")  # not a line per model call
    for graph in graph_names():
        module = graph_module(graph)
        summary = (module.__doc__ or graph).strip().splitlines()[0]
        server.add_tool(graph_tool(graph, dict(defaults or {})), name=graph,
                        description=f"{summary} Budget unit: {module.BUDGET_UNIT}.",
                        annotations=ToolAnnotations(title=graph, read_only_hint=True, open_world_hint=True))
    return server


def graph_tool(graph: str, defaults: dict):
    """The tool function running ``graph`` on the problem it is given."""
    names = ", ".join(graph_module(graph).CONTEXT.model_fields)

    def run(
        ctx: ToolContext,
        prompt: Annotated[str, Field(description=(
            "The problem: a Python function's signature and docstring (with entry_point), or a task statement "
            "whose program reads stdin and writes stdout (without entry_point)."))],
        entry_point: Annotated[str | None, Field(description=(
            "The function the tests call; leave out for a stdin/stdout program."))] = None,
        public_tests: Annotated[list[str] | list[StdioTest] | None, Field(description=(
            "Tests the search may run: assert statements calling entry_point, or {input, output} pairs for a "
            "stdin/stdout program. Default: the prompt's >>> examples (function problems)."))] = None,
        problem_id: Annotated[str, Field(description="A name for the problem in the result.")] = "problem",
        settings: Annotated[dict[str, Any] | None, Field(description=(
            f"Settings of this run by name (an unknown name is an error): {names}."))] = None,
    ) -> Annotated[CallToolResult, Solution]:
        events = 0

        def progress(event: dict) -> None:
            nonlocal events
            events += 1
            anyio.from_thread.run(ctx.report_progress, events, None, describe_event(event))

        try:
            problem = problem_of(prompt, entry_point, public_tests, problem_id)
            context = call_context(graph, defaults, settings or {})
            output = solve(problem, graph, context=context, on_event=progress)
        except user_errors() as exc:  # the caller's mistake or a failing service: their text, not a crash
            raise ToolError(redact(one_line(exc))) from exc
        return tool_result(output, context.prices)

    return run


def call_context(graph: str, defaults: dict, settings: dict) -> Context:
    """One call's context: the server's ``defaults`` under the call's own settings. The server's ``roles`` entries
    are kept for the roles the graph calls under them (``run_context``); a call's own ``roles`` are checked as
    given."""
    context = context_for(graph, {**defaults, **settings})
    return context if "roles" in settings else run_context(graph, context)


def problem_of(prompt: str, entry_point: str | None, public_tests: list | None, problem_id: str) -> Problem:
    """The problem a graph sees, from a tool's arguments; a ValueError names what is wrong."""
    tests = list(public_tests or [])
    if entry_point and not tests:
        tests = docstring_tests(prompt, entry_point)
    kind = "function" if entry_point or any(isinstance(t, str) for t in tests) else "stdio"
    return validate_problem({"id": problem_id, "prompt": prompt, "kind": kind, "entry_point": entry_point or None,
                             "public_tests": tests})


def tool_result(output: dict, prices: Mapping[str, Iterable[float]] | None = None) -> CallToolResult:
    """The program and its verdict as MCP content (a summary, then the code) and structured content, with each
    model's calls and tokens and what they cost at ``prices`` (embedded models at their default price)."""
    error = redact(output["error"]) if output.get("error") else None
    if not output.get("final_code"):
        raise ToolError(f"the search wrote no program ({output.get('stop_reason')}): {error or 'no reason given'}")
    node = (output.get("nodes") or {}).get(output.get("final_node")) or {}
    execution = node.get("execution") or {}
    passed, total = execution.get("passed"), execution.get("total")
    verdict = f"passed {passed}/{total} public tests" if total else "no public tests run: the program is unverified"
    cost = output.get("cost") or {}
    summary = (f"{verdict}; stop: {output.get('stop_reason')}; model calls: {cost.get('llm_calls', 0)}, "
               f"{cost.get('wall_s', 0):.1f} s" + (f"; the search ended early: {error}" if error else ""))
    per_model = per_model_text(cost, prices or {})
    summary += f"\nper model: {per_model}" if per_model else ""
    solution = Solution(program=output["final_code"], summary=summary, stop_reason=output.get("stop_reason"),
                        public_passed=passed, public_total=total, error=error,
                        cost={k: v for k, v in cost.items() if isinstance(v, int | float)},
                        models=cost.get("models", {}), spent=money_spent(cost, prices or {}))
    return CallToolResult(content=[TextContent(type="text", text=summary),
                                   TextContent(type="text", text=solution["program"])],
                          structured_content=dict(solution))
