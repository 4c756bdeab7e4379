"""A messages adapter: any search graph as a chat agent, or as a tool for another agent.

``as_chat_graph("codetree")`` is a graph over ``MessagesState``: the last human message holds a
problem (a Python function signature with its docstring, in a code block or not, and optionally
``assert`` lines, which become the public tests); the search graph solves it and the answer is an
AI message with the program in a code block. It drops into a supervisor as an agent, or into any
StateGraph with a ``messages`` key. ``as_solver_tool("codetree")`` is the same search as a tool that
``langchain.agents.create_agent`` can call with the problem text.
"""

from __future__ import annotations

import ast
import hashlib
import re
import textwrap

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from codeforest.graphs import kit
from codeforest.problems import Problem
from codeforest.registry import build_graph, graph_module, recursion_limit

_CODE_BLOCK = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
TOOL_ARGUMENT = ("A Python function signature with its docstring (what the function must do), optionally "
                 "followed by assert lines that a correct function passes.")


def problem_from_text(text: str, problem_id: str | None = None) -> Problem:
    """A function-style problem from a message: the signature and docstring as the prompt, asserts as tests.

    The function comes from the code block that defines it, or from the message's lines starting at the
    first ``def`` (or import) for as long as they are Python; ``assert`` lines anywhere in the message
    become the public tests. Raises ValueError when there is no top-level function to write.
    """
    text = text.replace("\r\n", "\n")
    blocks = [textwrap.dedent(b) for b in _CODE_BLOCK.findall(text)]
    code = next((b for b in blocks if _DEF.search(b)), None) or _code_in_prose(text)
    tree = _parse(code)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)] if tree else []
    if not functions:
        if tree and any(isinstance(n, (ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body):
            raise ValueError("the problem must be a top-level (not async, not a method) Python function")
        raise ValueError("no Python function signature found: give a `def name(...):` line with its docstring")
    lines = code.splitlines()
    asserts = [n for n in tree.body if isinstance(n, ast.Assert)]
    tests = ["\n".join(lines[a.lineno - 1:a.end_lineno]).strip() for a in asserts]
    tests += [t for t in _asserts_elsewhere(text, blocks, code) if t not in tests]
    called = {call.func.id for t in tests for call in ast.walk(ast.parse(t))
              if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)}
    entry = next((f for f in reversed(functions) if f.name in called), functions[-1])
    dropped = {i for a in asserts for i in range(a.lineno - 1, a.end_lineno)}
    if entry.body and _is_docstring(entry.body[0]) and len(entry.body) > 1:  # a placeholder body (pass, ...)
        dropped |= set(range(entry.body[0].end_lineno, entry.end_lineno))
    prompt = "\n".join(line for i, line in enumerate(lines) if i not in dropped).rstrip() + "\n"
    digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    return Problem(id=problem_id or f"chat/{entry.name}-{digest}", prompt=prompt, kind="function",
                   entry_point=entry.name, public_tests=tests)


_DEF = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\(|^\s*class\s+\w+", re.M)
_START = re.compile(r"^[ \t]*(?:from\s+[\w.]+\s+import\s|import\s+\w|def\s+\w+\s*\(|async\s+def\s|class\s+\w)", re.M)


def _code_in_prose(text: str) -> str:
    """The longest run of lines that parses as Python, from the first import or ``def`` on."""
    match = _START.search(text)
    if not match:
        return ""
    lines = textwrap.dedent(text[match.start():]).splitlines()
    for end in range(len(lines), 0, -1):
        candidate = "\n".join(lines[:end])
        if _parse(candidate) is not None and _DEF.search(candidate):
            return candidate
    return ""


def _asserts_elsewhere(text: str, blocks: list[str], code: str) -> list[str]:
    """Assert lines outside the function's code: in other blocks or in the prose."""
    sources = [b for b in blocks if b != code] or [_CODE_BLOCK.sub("", text)]
    found = []
    for source in sources:
        for line in source.splitlines():
            line = line.strip()
            if line.startswith("assert ") and _parse(line) is not None and line not in code:
                found.append(line)
    return found


def _parse(code: str) -> ast.Module | None:
    for attempt in (code, code.rstrip() + "\n    ...\n"):  # a bare signature line gets a body
        try:
            return ast.parse(attempt)
        except SyntaxError:
            continue
    return None


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(getattr(statement, "value", None), ast.Constant) \
        and isinstance(statement.value.value, str)


def answer_text(output: dict) -> str:
    """The search's output as chat text: the program in a code block and one line on how it was checked."""
    rate = output.get("public_pass_rate")
    checked = "no public tests to run (unverified)" if rate is None else f"{rate:.0%} of the public tests passed"
    return f"```python\n{output.get('final_code', '').rstrip()}\n```\n\n{checked}; stop: {output.get('stop_reason')}."


def _last_human(messages: list[AnyMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text if hasattr(message, "text") and isinstance(message.text, str) else str(message.content)
    return ""


def as_chat_graph(name: str, *, model: BaseChatModel | None = None, checkpointer=None) -> CompiledStateGraph:
    """The named search graph behind a messages interface; the context is the search graph's own."""
    search = build_graph(name, model=model)
    context_cls = graph_module(name).CONTEXT

    def solve(state: MessagesState, runtime: Runtime) -> dict:
        """Solve the problem in the last human message; answer with the program."""
        try:
            problem = problem_from_text(_last_human(state["messages"]))
        except ValueError as exc:
            return {"messages": [AIMessage(f"I could not read a problem: {exc}.", name=name)]}
        context = kit.settings(runtime, context_cls)
        output = kit.run_inner(search, {"problem": problem}, {"recursion_limit": recursion_limit(name, context)},
                               context=context)
        metadata = {k: output.get(k) for k in ("final_node", "stop_reason", "public_pass_rate", "cost")}
        return {"messages": [AIMessage(answer_text(output), name=name, response_metadata={"codeforest": metadata})]}

    builder = StateGraph(MessagesState, context_schema=context_cls)
    builder.add_node("solve", solve)
    builder.add_edge(START, "solve")
    builder.add_edge("solve", END)
    return builder.compile(checkpointer=checkpointer, name=f"{name}_chat")


def as_solver_tool(name: str, *, model: BaseChatModel | None = None, context: object = None) -> StructuredTool:
    """The named search as a tool taking the problem text; it returns the program (and the output as artifact)."""
    chat = as_chat_graph(name, model=model)
    context = graph_module(name).CONTEXT.of(context)

    def run(problem: str) -> tuple[str, dict]:
        reply = chat.invoke({"messages": [HumanMessage(problem)]}, context=context)["messages"][-1]
        return str(reply.content), reply.response_metadata.get("codeforest", {})

    return StructuredTool.from_function(
        run, name=name, response_format="content_and_artifact",
        description=f"Write a Python function with the {name} tree search and test it on the given asserts. "
                    f"problem: {TOOL_ARGUMENT}")
