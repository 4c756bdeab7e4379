"""Write a codeforest prompts folder holding the released CodeTree's own wording, read from a checkout.

    python measurements/conformance/codetree/released_prompts.py CHECKOUT OUT_DIR

The texts are read from the checkout's source (its module-level string constants, through ``ast``; nothing of it is
imported or run), so no released text is kept in this repository. The messages are laid out as the released code
sends them through its OpenAI client, whose wrapper puts ``PREFIX`` before every system message.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from codeforest.prompts import load_prompt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # replaykit, beside the method folders
from replaykit import prompts_command, write_prompts  # noqa: E402

PREFIX = "\nWrap any code snippet with a pair of ``` code fences in your response.\n"  # generators/model.py
STDIO = {"a function signature and its docstring": "a programming problem and its required input/output formats",
         "function implementation": "solution program to a problem"}  # generator_utils.py, when not --function


def constants(path: Path) -> tuple[dict, dict]:
    """A module's string constants, and those it sets again for stdio problems (``if Codecontests:``)."""
    found, stdio = {}, {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = [node] if isinstance(node, ast.Assign) else node.body if isinstance(node, ast.If) else []
        for assign in targets:
            if isinstance(assign, ast.Assign) and isinstance(assign.targets[0], ast.Name):
                try:
                    value = ast.literal_eval(assign.value)
                except ValueError:
                    continue
                (stdio if isinstance(node, ast.If) else found)[assign.targets[0].id] = value
    return found, stdio


def tests_system(path: Path) -> str:
    """The failing-test scoring call's system text: a literal inside ``generic_evaluate``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                node.value.startswith("Your task is to evaluate the execution outputs"):
            return node.value
    raise SystemExit(f"{path}: no test-scoring prompt found; is this a CodeTree checkout at 72c9c87?")


def prompts(checkout: Path) -> dict[str, dict]:
    """The four prompt files (thinker, solver, debugger, critic) with the released messages."""
    utils, _ = constants(checkout / "generators/generator_utils.py")
    generate, generate_stdio = constants(checkout / "generators/py_generate.py")
    hint = constants(checkout / "llm_agent_guide.py")[0]["ADD_HINT"]

    def stdio(text: str) -> str:
        for old, new in STDIO.items():
            text = text.replace(old, new)
        return text

    def code_system(name: str, stdio_mode: bool) -> str:
        source = generate_stdio if stdio_mode else generate
        return PREFIX + source[name] + "\n" + source["USE_PYTHON_CODEBLOCK_INSTRUCTION"]

    strategy = utils["PY_STRATEGY"].replace("{py_strategy_k}", "{k}")
    reflection = utils["PY_REFELCTION"].replace("{py_strategy_k}", "{k}")
    judged = ("Task Description:\n{problem}\n\nCode to Evaluate:\n```python\n{code}\n```\n"
              "Feedback from executing the code on visible test cases:\n")
    return {
        "thinker": {"inputs": ["problem", "k", "strategy", "code", "feedback"], "templates": {
            "strategy": {"system": {"function": PREFIX + strategy, "stdio": PREFIX + stdio(strategy)},
                         "dynamic": utils["Prompt_flexible"], "user": "{problem}"},
            "reflection": {"system": {"function": PREFIX + reflection, "stdio": PREFIX + stdio(reflection)},
                           "dynamic": utils["Prompt_flexible"],
                           "user": "[problem] {problem}\n\n[proposed strategy]{strategy}\n```python\n{code}\n```\n",
                           "results": "[unit test results]:\n{feedback}"}}},
        "solver": {"inputs": ["problem", "hint", "thoughts"], "templates": {
            "system": {"function": code_system("PY_SIMPLE_CHAT_INSTRUCTION", False),
                       "stdio": code_system("PY_SIMPLE_CHAT_INSTRUCTION", True)},
            "user": "{problem}", "user_with_hint": "{problem}" + hint + "{hint}\n",
            "user_with_thoughts": load_prompt("solver").templates["user_with_thoughts"]}},
        "debugger": {"inputs": ["problem", "code", "feedback", "reflection"], "templates": {
            "system": {"function": code_system("PY_REFLEXION_CHAT_INSTRUCTION", False),
                       "stdio": code_system("PY_REFLEXION_CHAT_INSTRUCTION", True)},
            "challenge": "Here's the challenge for you:\n{problem}\n[implement]:\n",
            "previous": "```python\n{code}\n```",
            "results": ("[unit test results from previous implement]:\n{feedback}\n\n"
                        "[reflection on previous implement]:\n"),
            "reflection": "{reflection}\n", "improve": "[improved implement]:\n"}},
        "critic": {"inputs": ["problem", "code", "feedback"], "templates": {
            "score": {"system": PREFIX + tests_system(checkout / "generators/generator_utils.py"),
                      "user": judged + "\n{feedback}"},
            "verify": {"system": PREFIX + utils["system_stop_simplified"], "user": judged + "```\n{feedback}\n```"}}},
    }


def write(checkout: Path, out: Path) -> Path:
    """Write the prompt files into ``out`` and load them back (a broken one fails here)."""
    return write_prompts(prompts(checkout), out)


if __name__ == "__main__":
    prompts_command(__doc__, write)
