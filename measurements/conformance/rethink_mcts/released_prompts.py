"""Write a codeforest prompts folder holding the released RethinkMCTS's own wording, read from a checkout.

    python measurements/conformance/rethink_mcts/released_prompts.py CHECKOUT OUT_DIR

The texts are read from the checkout's source through ``ast`` (nothing of it is imported or run), so no released
text is kept in this repository. The released prompts are f-strings; each expression in them becomes the codeforest
placeholder that carries the same text (``EXPRESSIONS`` per prompt), and an expression this script does not know
stops it (a checkout other than 3908cac). What a codeforest prompt file cannot say is left to the graph, and shows
in the replay as a divergence:

- the released state (problem, then ``"\\nThought: " + thought`` per thought, the thought as the model wrote it) is
  ``{problem}{thoughts}`` where codeforest passes the Solver and the Thinker ``search.state_text`` (that very text
  under ``released_text``), and ``{problem}\\n{thoughts}`` where it passes ``thoughts_text`` (the same less its
  first line break: the self-evaluation);
- the released code shows the model's whole reply where codeforest has the program it extracted from it: written
  here as ``{code}``, which codeforest fills with the whole reply under ``code_shown='reply'``;
- the LDB block analysis is a chat of four messages (system; the task and the state; the program as the
  assistant's; the failed test and the trace): ``blocks_task`` and ``blocks_released`` under
  ``rethink_block_trace='released'``; ``blocks`` is the last message alone, for codeforest's own block trace.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # replaykit, beside the method folders
from replaykit import prompts_command, write_prompts  # noqa: E402

STATE = "{problem}{thoughts}"  # tokenizer.decode(state): the problem and its "\nThought: ..." lines
REPLY = "{code}"  # the model's whole code reply, as the released code shows it (code_shown='reply')
STDIO = "\nQUESTION:\n{problem}\nUse Standard Input format\nANSWER:\n{thoughts}"  # APPSHandler's state
FAILED_TEST = "\n{test}\n\n# Current Execution Output: \n{output}"  # HumanevalExecutor.execute_test's feedback


class Source:
    """One module of the checkout, parsed."""

    def __init__(self, checkout: Path, path: str):
        self.path = checkout / path
        self.tree = ast.parse(self.path.read_text(encoding="utf-8"))

    def function(self, name: str, cls: str | None = None) -> ast.FunctionDef:
        """The function ``name`` (a method of ``cls`` when given)."""
        scope = self.tree.body
        if cls is not None:
            scope = next(n for n in scope if isinstance(n, ast.ClassDef) and n.name == cls).body
        for node in scope:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
        raise SystemExit(f"{self.path}: no function {name}; is this a RethinkMCTS checkout at 3908cac?")


def assigned(scope: ast.AST | list[ast.stmt], name: str) -> list[ast.expr]:
    """The values assigned (``=``, then ``+=``) to the variable ``name`` in ``scope``, in source order."""
    nodes = scope if isinstance(scope, list) else [scope]
    found = []
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                found.append(node)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                found.append(node)
    return [node.value for node in sorted(found, key=lambda n: (n.lineno, n.col_offset))]


def template(nodes: ast.expr | list[ast.expr], expressions: dict[str, str]) -> str:
    """The text of a released f-string (or literal, or a sum of them, or several in turn), each expression in it
    replaced by ``expressions[its source]``."""
    if isinstance(nodes, list):
        return "".join(template(node, expressions) for node in nodes)
    node = nodes
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(template(part, expressions) for part in node.values)
    if isinstance(node, ast.FormattedValue) and node.conversion == -1 and node.format_spec is None:
        return template(node.value, expressions)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return template(node.left, expressions) + template(node.right, expressions)
    source = ast.unparse(node)
    if source in expressions:
        return expressions[source]
    raise SystemExit(f"line {getattr(node, 'lineno', '?')}: the released prompt holds {source!r}, which this "
                     "script does not know; is this a RethinkMCTS checkout at 3908cac?")


def branches(function: ast.FunctionDef, flag: str) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """The two branches of the function's ``if not <flag>:``: the plain one, then the other."""
    for node in ast.walk(function):
        if isinstance(node, ast.If) and ast.unparse(node.test) == f"not {flag}":
            return node.body, node.orelse
    raise SystemExit(f"{function.name}: no `if not {flag}` branch; is this a RethinkMCTS checkout at 3908cac?")


def message(function: ast.FunctionDef, role: str) -> ast.expr:
    """The content of the first ``Message(role=role, content=...)`` in the function's source."""
    for node in sorted(ast.walk(function), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "Message":
            keywords = {k.arg: k.value for k in node.keywords}
            if isinstance(keywords.get("role"), ast.Constant) and keywords["role"].value == role:
                return keywords["content"]
    raise SystemExit(f"{function.name}: no {role} message; is this a RethinkMCTS checkout at 3908cac?")


def prompts(checkout: Path) -> dict[str, dict]:
    """The four prompt files RethinkMCTS reads (thinker_mcts, solver_mcts, critic_mcts, rethink), released words."""
    gpt = Source(checkout, "ChatModels/GPT.py")
    mcts = Source(checkout, "models/RethinkMCTS.py")
    ldb = Source(checkout, "models/ldb.py")

    default_system = template(assigned(gpt.function("generate_response_api", "GPTChat"), "sys_msg")[0], {})
    expand, verbal = branches(gpt.function("get_top_k_rationale_predict", "GPTChat"), "with_verbal")
    width = {"self.width": "{width}"}
    expand_text = template(assigned(expand, "with_instru_input_prompt"), {"input_prompt": STATE} | width)
    verbal_text = template(assigned(verbal, "with_instru_input_prompt"), {"input_prompt": "{feedback}"} | width)
    code = assigned(gpt.function("get_rationale_predicted_sequence", "GPTChat"), "with_instru_input_prompt")[0]

    evaluation = mcts.function("get_evaluation", "RethinkMCTS")
    reset = mcts.function("reset_child", "MineDecisionNode")
    rethink_text = template(assigned(reset, "input_prompt")[0], {"verbal_feedback": "{feedback}"})

    debug = ldb.function("ldb_debug")
    failed = template(assigned(debug, "feedback")[0], {"failed_test": FAILED_TEST})
    blocks = template(message_sum(debug), {"feedback": failed}) + "\n{trace}\n"  # + each "\n[BLOCK-i]\n...", "\n"
    released_blocks = template(message_sum(debug), {"feedback": template(assigned(debug, "feedback")[0], {
        "failed_test": "{failed_test}"})}) + "{trace}\n"
    return {
        "thinker_mcts": {"inputs": ["problem", "thoughts", "width", "code", "feedback"], "templates": {
            "system": default_system, "expand": expand_text,
            "expand_with_feedback": verbal_text, "expand_with_feedback_released": verbal_text}},
        "solver_mcts": {"inputs": ["problem", "thoughts"], "templates": {
            "system": {"function": default_system, "stdio": default_system},
            "user_with_thoughts": {"function": template(code, {"input_prompt": STATE}),
                                   "stdio": template(code, {"input_prompt": STDIO})},
            "user": template(code, {"input_prompt": "{problem}"})}},
        "critic_mcts": {"inputs": ["problem", "thoughts", "code", "test", "output", "trace", "failed_test"],
                        "templates": {
            "self_eval_system": template(assigned(evaluation, "system_msg")[0], {}),
            "self_eval": template(assigned(evaluation, "input_prompt")[0], {
                "self.tokenizer.decode(cur_state)": "{problem}\n{thoughts}", "cur_code": REPLY}),
            "blocks_system": template(message(debug, "system"), {}),
            "blocks": blocks,
            "blocks_task": template(message(debug, "user"), {"prompt": STATE}),
            "blocks_released": released_blocks}},
        "rethink": {"inputs": ["problem", "thoughts", "code", "feedback"], "templates": {
            "system": template(assigned(reset, "system_msg")[0], {}),
            "user": rethink_text, "user_released": rethink_text}},
    }


def message_sum(debug: ast.FunctionDef) -> ast.expr:
    """The block-analysis request: the ``Message(role="user", content=feedback + "...")`` of ``ldb_debug``."""
    for node in ast.walk(debug):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "Message":
            content = {k.arg: k.value for k in node.keywords}.get("content")
            if isinstance(content, ast.BinOp) and ast.unparse(content.left) == "feedback":
                return content
    raise SystemExit("ldb_debug: no block-analysis message; is this a RethinkMCTS checkout at 3908cac?")


def write(checkout: Path, out: Path) -> Path:
    """Write the prompt files into ``out`` and load them back (a broken one fails here)."""
    return write_prompts(prompts(checkout), out)


if __name__ == "__main__":
    prompts_command(__doc__, write)
