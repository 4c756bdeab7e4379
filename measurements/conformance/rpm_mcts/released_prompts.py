"""Write a codeforest prompts folder holding the released RPM-MCTS's own wording, read from a checkout.

    python measurements/conformance/rpm_mcts/released_prompts.py CHECKOUT OUT_DIR

The texts are read from the checkout's source through ``ast`` (nothing of it is imported or run), so no released
text is kept in this repository: the templates of ``baselines/RPM_MCTS/prompt/prompts.py`` (module-level string
constants) and the literals ``MCTS/task.py``'s wrappers glue around them (``SearchTask.*_wrap``). Each template is
the released message with codeforest's placeholders where the released code puts its variables, and nothing else:

- ``thinker_rpm`` ``topic``: ``get_topic_prompt_en`` (its own topic list; ``{topics}`` is not used);
- ``thinker_rpm`` ``next_step``: ``code_proposal_prompt_use_reflection_en`` + problem + ``Existing Steps`` + path
  + ``Analysis`` + reflection + history + the closing lines (``zero_single_propose_wrap_use_reflection``);
- ``thinker_rpm`` ``full_steps``: ``code_proposal_prompt_en_v2`` + problem + ``Existing Steps`` + path + ``Your
  output`` (``get_full_step_prompt_wrap``);
- ``thinker_rpm`` ``full_steps_reflection``: ``rerollout_full_steps_with_reflection_prompt_en``;
- ``thinker_rpm`` ``edit``: ``renew_rollout_node_prompt_en``;
- ``critic_rpm`` ``critic``: ``critic_en``, with its two worked examples;
- ``critic_rpm`` ``evaluate``: ``rollout_full_steps_prompt_en``, with its example answers and status-code sentence;
- ``critic_rpm`` ``locate``: ``remove_wrong_steps_debug_failed_prompt_en`` (the released run's locator: LDB off);
- ``solver_rpm`` ``user_with_thoughts``: ``generate_code_prompt_en`` (one text for both problem kinds, as released).

``{steps}`` stands where the released code puts a node's ``y`` (or the roll-out's step list), ``{reflection}``
its reflection, ``{siblings}`` its history lines, ``{wrong}`` its wrong code with the reflection, ``{results}``
the sandbox results, ``{debug}`` the evaluator's analysis. How codeforest fills them (``"\\n".join(steps)``,
``(none)`` for nothing) is codeforest's code, not this folder's: ``replay.py`` shows where they differ.

Two templates no codeforest role reads yet hold released wording a faithful run needs: ``thinker_rpm``
``history`` (the sentence the released proposer puts before its ``History i: ...`` lines, only when there are
any) and ``extract`` (``extract_step_prompt_en`` + the roll-out's reply, in ``{steps}``, + ``Output:``: the call
the released code makes after every roll-out to wrap its steps in ``<step>`` tags). ``critic_rpm``'s LDB block
analysis (``blocks``, ``blocks_format``) is codeforest's packaged text: the released run has LDB off.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from codeforest.prompts import load_prompt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # replaykit, beside the method folders
from replaykit import prompts_command, write_prompts  # noqa: E402

PROMPTS = "baselines/RPM_MCTS/prompt/prompts.py"
TASK = "baselines/RPM_MCTS/MCTS/task.py"
# what each placeholder of a released template becomes in codeforest's
RENAMES = {"question": "problem", "analysis": "thoughts", "solution": "steps", "existing_steps": "steps",
           "wrong_code_with_reflection": "wrong", "sandbox_result": "results"}


def constants(path: Path) -> dict[str, str]:
    """A module's string constants (``NAME = '''...'''``)."""
    found = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and \
                isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found[node.targets[0].id] = node.value.value
    return found


def literals(path: Path, function: str) -> list[str]:
    """The string literals of one function of a module, in source order."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            found = [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            return [n.value for n in sorted(found, key=lambda n: (n.lineno, n.col_offset))]
    raise SystemExit(f"{path}: no function {function}; is this an RPM-MCTS checkout at 9189885?")


def one(texts: list[str], marker: str) -> str:
    """The one literal holding ``marker``."""
    hits = [t for t in texts if marker in t]
    if len(hits) != 1:
        raise SystemExit(f"expected one literal with {marker!r}, found {len(hits)}; is this RPM-MCTS at 9189885?")
    return hits[0]


def renamed(template: str, **renames: str) -> str:
    """A released ``str.format`` template with codeforest's placeholder names."""
    for old, new in {**RENAMES, **renames}.items():
        template = template.replace("{" + old + "}", "{" + new + "}")
    return template


def prompts(checkout: Path) -> dict[str, dict]:
    """The three prompt files (thinker_rpm, critic_rpm, solver_rpm) with the released messages."""
    texts = constants(checkout / PROMPTS)
    propose = literals(checkout / TASK, "zero_single_propose_wrap_use_reflection")
    full = literals(checkout / TASK, "get_full_step_prompt_wrap")
    extract = literals(checkout / TASK, "extract_step_prompt_wrap")
    existing, output = one(full, "Existing Steps"), one(full, "Your output")
    thinker, critic, solver = (load_prompt(name) for name in ("thinker_rpm", "critic_rpm", "solver_rpm"))
    return {
        "thinker_rpm": {"inputs": list(thinker.inputs), "templates": {
            "topic": texts["get_topic_prompt_en"],
            "next_step": (texts["code_proposal_prompt_use_reflection_en"] + "{problem}" + one(propose, "Existing Steps")
                          + "{steps}" + one(propose, "Analysis") + "{reflection}" + "{siblings}"
                          + one(propose, "Your response should only") + one(propose, "Your output")),
            "history": one(propose, "historical content"),
            "full_steps": texts["code_proposal_prompt_en_v2"] + "{problem}" + existing + "{steps}" + output,
            "full_steps_reflection": renamed(texts["rerollout_full_steps_with_reflection_prompt_en"]),
            "edit": renamed(texts["renew_rollout_node_prompt_en"]),
            "extract": texts["extract_step_prompt_en"] + "{steps}" + one(extract, "Output")}},
        "critic_rpm": {"inputs": list(critic.inputs), "templates": {
            "critic": renamed(texts["critic_en"]),
            "evaluate": renamed(texts["rollout_full_steps_prompt_en"]),
            "locate": renamed(texts["remove_wrong_steps_debug_failed_prompt_en"], reflection="debug"),
            "blocks": critic.templates["blocks"], "blocks_format": critic.templates["blocks_format"]}},
        "solver_rpm": {"inputs": list(solver.inputs), "templates": {
            "user_with_thoughts": renamed(texts["generate_code_prompt_en"])}},
    }


def write(checkout: Path, out: Path) -> Path:
    """Write the prompt files into ``out`` and load them back (a broken one fails here)."""
    return write_prompts(prompts(checkout), out)


if __name__ == "__main__":
    prompts_command(__doc__, write)
