"""LDB's block-by-block trace as the released RethinkMCTS writes it, for ``rethink_block_trace='released'``.

The program (after the released import header) is cut into the basic blocks of staticfg's control-flow graph as
LDB builds it; the failing call runs under ``python -m trace -t`` and, instrumented to print the variables after
each block, once more; the executed lines are grouped at the printed block ends into ``[BLOCK-i]`` texts with
``# var=value`` lines. Both runs happen in the sandbox (one small program that starts them, each with LDB's 5 s);
everything else is text work here. Function problems only (the released HumanEval path).
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from dataclasses import dataclass, field

from codeforest.suites import TestSuite
from codeforest.tools.released_exec import released_program
from codeforest.tools.sandbox import run

IMPORT_HEADER = ("from typing import *\nimport math\nfrom heapq import *\nimport itertools\nimport re\nimport typing\n"
                 "import heapq\n_str=str\nimport re\n")
RUN_LIMIT_S = 5  # each of LDB's two runs
MAX_BLOCKS = 10  # the first 5 and the last 5
TRACE_FILE = ".tmp.py.0"
TIMEOUT, FAILED, UNPARSED = "*timeout*", "*execution fail*", "*parse fail*"


def executed_lines(trace: str, entry: str) -> list[str] | None:
    """``(lineno): source`` of each line ``python -m trace -t`` printed for the program from the first call of
    ``entry`` up to the next one, a line within the one kept before it left out; ``None`` when ``entry`` was
    never called. (Runs in the sandbox too, on the whole trace: see ``RUNNER``.)"""
    parts = trace.split(f"--- modulename: {TRACE_FILE.rsplit('.', 1)[0]}, funcname: {entry}\n")
    if len(parts) < 2:
        return None
    kept = []
    for line in parts[1].split("\n"):
        if line.lstrip().startswith(("'''", '"""', "#")) or not line.startswith(TRACE_FILE):
            continue
        if not kept or kept[-1] not in line:
            kept.append(line[len(TRACE_FILE):])
    return kept


# Starts LDB's two runs in the sandbox: ``ldb_run(source, mode, entry)`` writes the program and runs it under the
# tracer ("trace": the executed lines come back) or alone ("values": its value lines and its stderr), each with
# LDB's limit; a JSON text.
RUNNER = f'''
import json, subprocess, sys

TRACE_FILE = "{TRACE_FILE}"


{inspect.getsource(executed_lines)}

def ldb_run(source, mode, entry):
    with open(TRACE_FILE, "w") as f:
        f.write(source)
    command = [sys.executable, "-m", "trace", "-t", TRACE_FILE] if mode == "trace" else [sys.executable, TRACE_FILE]
    try:
        done = subprocess.run(command, capture_output=True, timeout={RUN_LIMIT_S})
    except subprocess.TimeoutExpired:
        return json.dumps({{"timeout": True}})
    out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    if mode == "trace":
        return json.dumps({{"lines": executed_lines(out, entry)}})
    values = [line for line in out.split("\\n")[:-1] if line.startswith("Value_")]
    return json.dumps({{"values": values, "stderr": err[:1000000]}})
'''


@dataclass
class _Block:
    lines: list[int] = field(default_factory=list)  # the line of each statement the block holds
    exits: list[_Block] = field(default_factory=list)


class BlockSplit(ast.NodeVisitor):
    """The basic blocks of staticfg's CFG builder as LDB modified it, reduced to what LDB reads: which statements
    share a block, and which blocks can be reached. Its quirks are kept: a ``raise``, ``pass``, ``break`` or
    ``continue`` is in no block, a loop's ``else`` is never visited, code after a ``return`` or after ``while True``
    (without a break) is unreachable, a function's blocks are built alone (the last of a name wins), and a call
    whose function is a subscript of anything but a name fails the split (LDB then traces nothing)."""

    def __init__(self):
        self.entry = self.current = _Block()
        self.functions: dict[str, BlockSplit] = {}
        self.loop_guards: list[_Block] = []
        self.after_loops: list[_Block] = []

    def build(self, body: list[ast.stmt]) -> BlockSplit:
        """Visit a module's or a function's statements."""
        for statement in body:
            self.visit(statement)
        return self

    def blocks(self):
        """The reachable blocks, breadth first from the entry, then each function's."""
        seen, queue = set(), [self.entry]
        while queue:
            block = queue.pop(0)
            seen.add(id(block))
            queue += [b for b in block.exits if id(b) not in seen and all(b is not q for q in queue)]
            yield block
        for function in self.functions.values():
            yield from function.blocks()

    def _new(self, after: _Block | None = None) -> _Block:
        block = _Block()
        if after is not None:
            after.exits.append(block)
        return block

    def _add(self, node: ast.stmt) -> None:
        self.current.lines.append(node.lineno)

    def _simple(self, node) -> None:
        self._add(node)
        self.generic_visit(node)

    visit_Expr = visit_Assign = visit_AnnAssign = visit_AugAssign = _simple  # noqa: N815 (ast.NodeVisitor names)

    def visit_Import(self, node) -> None:  # noqa: N802
        self._add(node)

    visit_ImportFrom = visit_Import  # noqa: N815

    def visit_Raise(self, node) -> None:  # noqa: N802
        pass

    def visit_Call(self, node) -> None:  # noqa: N802 - the called name is read, the arguments are not visited
        function = node.func
        while isinstance(function, ast.Attribute):
            function = function.value
        if isinstance(function, ast.Subscript) and not isinstance(function.value, ast.Name):
            raise ValueError(f"'{type(function.value).__name__}' object has no attribute 'id'")

    def visit_Assert(self, node) -> None:  # noqa: N802
        self._add(node)
        self._new(self.current)  # the failing case: a final block
        self.current = self._new(self.current)
        self.generic_visit(node)

    def visit_If(self, node) -> None:  # noqa: N802
        self._add(node)
        branch, after = self._new(self.current), _Block()
        if node.orelse:
            self.current = self._new(self.current)
            self.build(node.orelse)
            if not self.current.exits:
                self.current.exits.append(after)
        else:
            self.current.exits.append(after)
        self.current = branch
        self.build(node.body)
        if not self.current.exits:
            self.current.exits.append(after)
        self.current = after

    def _guard(self) -> _Block:
        if not self.current.lines and not self.current.exits:
            return self.current
        return self._new(self.current)

    def _loop(self, node, always: bool) -> None:
        guard = self.current = self._guard()
        self._add(node)
        body, after = self._new(guard), _Block()
        if not always:
            guard.exits.append(after)
        self.loop_guards.append(guard)
        self.after_loops.append(after)
        self.current = body
        self.build(node.body)
        if not self.current.exits:
            self.current.exits.append(guard)
        self.current = after
        self.loop_guards.pop()
        self.after_loops.pop()

    def visit_While(self, node) -> None:  # noqa: N802
        test = node.test  # `while True:` (or 1) has no exit to the code after the loop
        self._loop(node, type(test) is ast.Constant and test.value in [True, False] and bool(test.value))

    def visit_For(self, node) -> None:  # noqa: N802
        self._loop(node, always=False)

    def visit_Break(self, node) -> None:  # noqa: N802
        self.current.exits.append(self.after_loops[-1])

    def visit_Continue(self, node) -> None:  # noqa: N802
        self.current.exits.append(self.loop_guards[-1])

    def visit_FunctionDef(self, node) -> None:  # noqa: N802
        self._add(node)
        self.functions[node.name] = BlockSplit().build(node.body)

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815

    def visit_Return(self, node) -> None:  # noqa: N802
        self._add(node)
        self.current = _Block()  # nothing jumps here

    def visit_Await(self, node) -> None:  # noqa: N802
        after = self._new(self.current)
        self.generic_visit(node)
        self.current = after

    def visit_Yield(self, node) -> None:  # noqa: N802
        self.current = self._new(self.current)


def block_bounds(program: str) -> list[tuple[int, int]]:
    """(first, last) statement line of each reachable block; ``ValueError`` (or ``SyntaxError``) when LDB's split
    fails."""
    split = BlockSplit().build(ast.parse(program).body)
    return [(b.lines[0], b.lines[-1]) for b in split.blocks() if b.lines]


def function_range(program: str, entry: str) -> tuple[int, int] | None:
    """The 0-based first and last line of the top-level function ``entry``."""
    for node in ast.parse(program).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry:
            return node.lineno - 1, node.end_lineno - 1
    return None


def _after(lines) -> tuple[str, int]:
    line = next(s for s in lines if s != "")
    return line.strip(), int((len(line) - len(line.lstrip())) / 4)


def instrument(program: str, entry: str, bounds: list[tuple[int, int]]) -> str:
    """The program with LDB's value print after the line before each block and after each block's last line,
    inside ``entry`` (the lines after it are cut after the first, as LDB does)."""
    lines = program.split("\n")
    first, last = function_range(program, entry)
    marks = {start - 1 for start, _ in bounds} | {end for _, end in bounds}
    out = []
    for i, line in enumerate(lines):
        if i < first:
            out.append(line)
            continue
        if i > last:
            out.append(line)
            break
        if i + 1 not in marks:
            out.append(line)
            continue
        refs, indent = _after(reversed(lines[:i + 1]))
        if refs.startswith(("else:", "elif ", "if ", "while ", "for ", "def ")):
            refs, indent = _after(lines[i + 1:])
        payload = "    " * indent + (f"__var_list = vars();print(f'Value_After:{i + 1}|' + '|'.join([(x + '=' + "
                                      "_str(__var_list[x])) for x in __var_list if not x.startswith('__')]));")
        if line.find(" return ") != -1:
            line = line.replace(" return ", " _ret = ")
            payload += " return _ret"
        out += [line, payload]
    return "\n".join(out)


_NUMBER = re.compile(r"\([0-9]+\):")


def _lineno(line: str) -> int:
    match = _NUMBER.search(line)
    return int(line[match.start() + 1:match.end() - 2])


def _source(line: str) -> str:
    return line[_NUMBER.search(line).end() + 1:]


def _indent(line: str) -> int:
    text = _source(line)
    return int((len(text) - len(text.lstrip())) / 4)


def trace_blocks(profiles: list[str], lines: list[str]) -> list[list[str]]:
    """LDB's blocks: the executed ``lines`` cut at each printed block end (``profiles``, the value run's
    ``Value_After:`` lines), each with ``# var=value`` (tab-separated, a long list cut to its first and last 50
    characters) before and after."""
    numbers = [_lineno(x) for x in lines]
    blocks, block, last, at = [], [], "", 0
    for profile in profiles:
        if at >= len(lines):
            break
        lineno = int(profile.split(":")[1].split("|")[0])
        shown = "\t".join(profile.split("|")[1:])
        shown = shown if len(shown) < 100 else shown[:50] + "..." + shown[-50:]
        if lineno not in numbers:
            last = shown
            continue
        block.append("    " * _indent(lines[at]) + "# " + last)
        while at < len(lines) and _lineno(lines[at]) != lineno:
            block.append(_source(lines[at]))
            at += 1
        if at == len(lines):
            break
        block += [_source(lines[at]), "    " * _indent(lines[at]) + "# " + shown]
        last = shown
        blocks.append(block)
        block = []
        at += 1
    if at < len(lines):
        blocks.append(["    " * _indent(lines[at]) + "# " + last] + block + [_source(x) for x in lines[at:]])
    return blocks


def error_message(stderr: str) -> str:
    """LDB's one-line account of a traceback: the failing line and the error."""
    last, code = "", ""
    for line in stderr.split("\n"):
        if 'File "' in last:
            code = line
        elif "Error: " in line:
            return line if "__var_list" in code else f"This line is wrong: ```{code}```\n{line}"
        last = line
    return ""


def program_of(reply: str) -> str:
    """The program LDB traces from a code reply: without a ``__main__`` block (its lines dedented and kept), the
    first ```python block's text, without the import header."""
    if "__name__" in reply and "__main__" in reply:
        kept, inside = "", False
        for line in reply.split("\n"):
            if inside:
                line = line[1:] if line.startswith("\t") else line[4:] if line.startswith("    ") else line
            if "__name__" in line and "__main__" in line:
                inside = True
            else:
                kept += line + "\n"
        reply = kept
    reply = released_program(reply)
    return reply.replace(IMPORT_HEADER, "") if IMPORT_HEADER in reply else reply


def released_trace(program: str, failed_test: str, entry: str, *, backend: str | None = None) -> list[list[str]] | str:
    """LDB's trace blocks of ``program`` (``program_of`` a reply) on a failing test (its released feedback text,
    ``assert ...`` first): the blocks, or LDB's reason for none (``*timeout*``, ``*execution fail*...``, ``*parse
    fail*``)."""
    source = IMPORT_HEADER + program
    call = failed_test.replace("assert ", "").split("==")[0]
    try:
        bounds = block_bounds(source)
    except (SyntaxError, ValueError, RecursionError) as exc:
        return FAILED + str(exc)
    if function_range(source, entry) is None:
        return FAILED + f"{entry} is not a function of the program"
    try:  # the value run's program starts with a line break, as LDB writes it
        profiling = ["\n" + instrument(source, entry, bounds) + "\n" + call]
    except StopIteration:  # a block header with no line after it (a one-line loop ends the program)
        profiling = []
    traced, profiled = _runs([source + "\n" + call, *profiling], entry, backend)
    if traced.get("timeout"):
        return TIMEOUT
    lines = traced.get("lines")
    if not isinstance(lines, list):
        return UNPARSED
    if not profiling:  # LDB looks for that line only after a trace run that worked, and raises: no blocks
        return FAILED + "no line after a block's header to print its values at"
    if profiled.get("timeout"):
        return TIMEOUT
    stderr = str(profiled.get("stderr", ""))
    if "Traceback (most recent call last):" in stderr and "AssertionError" not in stderr:
        return FAILED + error_message(stderr)
    return trace_blocks([str(v) for v in profiled.get("values", [])], [str(x) for x in lines])


def _runs(sources: list[str], entry: str, backend: str | None) -> list[dict]:
    """LDB's trace run and value run of the sources (the trace run's alone when only it is given), in the sandbox
    (a run that gave nothing: timed out)."""
    suite = TestSuite("calls", tuple(json.dumps([s, mode, entry]) for s, mode in
                                     zip(sources, ("trace", "values")[:len(sources)], strict=True)), "ldb_run")
    result = run(RUNNER, suite, timeout=RUN_LIMIT_S + 5, backend=backend)
    replies = []
    for outcome in result.outcomes:
        try:
            reply = json.loads(json.loads(outcome.actual)) if outcome.actual else {}
        except (json.JSONDecodeError, TypeError):
            reply = {}
        replies.append(reply if isinstance(reply, dict) and reply else {"timeout": True})
    return replies + [{"timeout": True}] * (2 - len(replies))


def blocks_text(blocks: list[list[str]]) -> str:
    """The ``[BLOCK-i]`` texts LDB sends: at most the first 5 and last 5 blocks (each block's text is cut to 5,000
    cl100k tokens by the released code; approximated here as 20,000 characters)."""
    if len(blocks) > MAX_BLOCKS:
        blocks = blocks[:MAX_BLOCKS // 2] + blocks[-(MAX_BLOCKS // 2):]
    return "".join((f"\n[BLOCK-{i}]\n" + "\n".join(b))[:20000] for i, b in enumerate(blocks))
