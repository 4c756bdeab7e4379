"""Write a codeforest prompts folder holding the released CodePRM's own wording, read from a checkout.

    python measurements/conformance/codeprm/released_prompts.py CHECKOUT OUT_DIR

The texts are read from the checkout's source through ``ast`` (nothing of it is imported or run), so no released
text is kept in this repository: the f-strings the released GVR-MCTS path sends, with codeforest's placeholders
where the released code puts its variables, and nothing else. Each codeforest template and the released text it
holds:

- ``thinker_gvr`` ``system`` and ``solver_mcts`` ``system.function``: ``GPT35Chat.generate_response_api``'s
  default system message;
- ``thinker_gvr`` ``expand`` (with ``answer_format.text``): ``get_top_k_rationale_predict``, its ``input_prompt``
  the state (the problem and ``\\nThought: ...`` lines), ``tmp_instruct`` empty;
- ``thinker_gvr`` ``expand_with_feedback``: the same, its ``input_prompt`` ``CodePRMMCTS.gather_feedback``'s
  ``verbalFeedback`` and ``tmp_instruct`` the verbal one;
- ``thinker_gvr`` ``one``, ``one_with_feedback``: ``get_top_k_rationale_predict_sample`` (the fallback: one
  request with ``n`` = width at temperature 0.7);
- ``solver_mcts`` ``user_with_thoughts.function``: ``get_rationale_predicted_sequence``'s instruction + the state;
- ``verifier`` ``locate``: ``CodePRMMCTS.llm_locate_wrong_thought`` (the default locator, ``--verify_pos_mode llm``);
- ``verifier`` ``execution``, ``thoughts`` (with ``scores_format.text``): ``CodePRMMCTS.llm_score_thought``, with
  and without execution (``--with_execution_enhance``);
- ``rethink_gvr`` ``system``, ``refine``: ``CodePRMMCTS.refine_thoughts``.

Placeholders: ``{problem}{thoughts}`` where the released code puts its state (the problem, then a
``\\nThought: <text>`` line per thought: ``search.thought_lines``); ``{state}`` where it puts the problem with
numbered thoughts (``i-Thought: ...``, ``agents.verifier.thoughts_state``/``numbered``); ``{feedback}`` where it puts
``failed_tests.strip()`` (``pure_feedback``), and ``\\n\\n{feedback}`` where it puts ``failed_tests`` itself (which
starts with two line breaks); ``{width}``, ``{refine_id}``.

``{code}``: the released code shows ``tokenizer.decode(code_id)``, the Solver's whole reply, where codeforest has the
program it extracted; codeforest shows the whole reply there under ``code_shown='reply'``.

Templates no released text exists for keep codeforest's packaged text: ``thinker_gvr`` ``step`` (GVR-BoN) and the
``structured`` answer formats (this replay sends plain text: ``structured_output`` false), and ``solver_mcts``'s
stdio and plain variants.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from codeforest.prompts import load_prompt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # replaykit, beside the method folders
from replaykit import prompts_command, write_prompts  # noqa: E402

GPT35 = "ChatModels/GPT35.py"
MCTS = "models/CodePRMMCTS.py"
THOUGHTS_FORMAT = "* Please wrap your response into a JSON object that contains keys `Thought-i`"
SCORES_FORMAT = "* Please wrap your response into a JSON object in ```json"
CODE = "{code}"  # the Solver's whole reply (code_shown='reply'): see the module docstring


def function(path: Path, name: str) -> ast.FunctionDef:
    """The one function (or method) ``name`` of a module."""
    found = [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(n, ast.FunctionDef) and n.name == name]
    if len(found) != 1:
        raise SystemExit(f"{path}: expected one function {name}, found {len(found)}; is this CodePRM at 1f54aef?")
    return found[0]


def assigned(path: Path, func: str, target: str) -> list[ast.expr]:
    """The values assigned to ``target`` in ``func``, in source order."""
    return [n.value for n in ast.walk(function(path, func))
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and n.targets[0].id == target]


def text(node: ast.expr, fill: dict[str, str]) -> str:
    """A released string expression (literal, f-string, or ``+`` of them) as text, each ``{expr}`` replaced by
    ``fill[expr]`` (its source); an expression ``fill`` does not name is an error."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(text(v, fill) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        source = ast.unparse(node.value)
        if source not in fill or node.conversion != -1 or node.format_spec is not None:
            raise SystemExit(f"unexpected {{{source}}} in a released prompt; is this CodePRM at 1f54aef?")
        return fill[source]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return text(node.left, fill) + text(node.right, fill)
    if isinstance(node, ast.Name) and node.id in fill:
        return fill[node.id]
    raise SystemExit(f"unexpected expression {ast.unparse(node)!r} in a released prompt")


def split(whole: str, marker: str) -> tuple[str, str]:
    """A prompt cut where its answer format starts: (the prompt with ``{answer_format}`` there, the format)."""
    at = whole.index(marker)
    return whole[:at] + "{answer_format}", whole[at:]


def prompts(checkout: Path) -> dict[str, dict]:
    """The four prompt files GVR-MCTS reads, with the released messages."""
    gpt35, mcts = checkout / GPT35, checkout / MCTS
    system = assigned(gpt35, "generate_response_api", "sys_msg")[0].value
    plain, verbal = (text(v, {}) for v in assigned(gpt35, "get_top_k_rationale_predict", "tmp_instruct"))
    expand = assigned(gpt35, "get_top_k_rationale_predict", "with_instru_input_prompt")[0]
    one = assigned(gpt35, "get_top_k_rationale_predict_sample", "with_instru_input_prompt")[0]
    state = "{problem}{thoughts}"
    feedback_state = text(next(v for v in assigned(mcts, "gather_feedback", "verbalFeedback")
                               if isinstance(v, ast.JoinedStr)),
                          {"state": state, "code": CODE, "failed_tests": "\n\n{feedback}"})
    width = "{width}"
    expand_text, thoughts_format = split(text(expand, {"input_prompt": state, "tmp_instruct": plain,
                                                       "self.width": width}), THOUGHTS_FORMAT)
    expand_feedback, feedback_format = split(text(expand, {"input_prompt": feedback_state, "tmp_instruct": verbal,
                                                           "self.width": width}), THOUGHTS_FORMAT)
    assert feedback_format == thoughts_format, "the two expansions ask for one answer format"
    solver_text = text(assigned(gpt35, "get_rationale_predicted_sequence", "with_instru_input_prompt")[0],
                       {"input_prompt": state})

    shown = {"state": "{state}", "cur_state": "{state}", "code": CODE, "cur_code": CODE,
             "pure_feedback": "{feedback}", "refine_id": "{refine_id}"}
    locate = text(assigned(mcts, "llm_locate_wrong_thought", "input_prompt")[0], shown)
    refine = text(assigned(mcts, "refine_thoughts", "input_prompt")[0], shown)
    with_execution, without_execution = (text(v, shown) for v in assigned(mcts, "llm_score_thought", "input_info"))
    score = assigned(mcts, "llm_score_thought", "input_prompt")[0]
    execution, scores_format = split(text(score, {"input_info": with_execution}), SCORES_FORMAT)
    thoughts_only, scores_format_2 = split(text(score, {"input_info": without_execution}), SCORES_FORMAT)
    assert scores_format == scores_format_2
    expert = {f: assigned(mcts, f, "system_msg")[0] for f in ("llm_locate_wrong_thought", "refine_thoughts",
                                                              "llm_score_thought")}
    expert_text = {f: text(v, {}) for f, v in expert.items()}
    assert len(set(expert_text.values())) == 1, "one system message for locator, refine and verifier"

    thinker, solver = load_prompt("thinker_gvr").templates, load_prompt("solver_mcts").templates
    verifier, rethink = load_prompt("verifier").templates, load_prompt("rethink_gvr").templates
    return {
        "thinker_gvr": {"inputs": ["problem", "thoughts", "code", "feedback", "width", "answer_format"], "templates": {
            "system": system, "expand": expand_text, "expand_with_feedback": expand_feedback,
            "one": text(one, {"input_prompt": state, "tmp_instruct": plain}),
            "one_with_feedback": text(one, {"input_prompt": feedback_state, "tmp_instruct": verbal}),
            "step": thinker["step"],
            "answer_format": {"text": thoughts_format, "structured": thinker["answer_format"]["structured"]}}},
        "solver_mcts": {"inputs": ["problem", "thoughts", "hint"], "templates": {
            **solver, "system": {**solver["system"], "function": system},
            "user_with_thoughts": {**solver["user_with_thoughts"], "function": solver_text}}},
        "verifier": {"inputs": ["state", "code", "feedback", "answer_format"], "templates": {
            "system": expert_text["llm_score_thought"], "execution": execution, "thoughts": thoughts_only,
            "scores_format": {"text": scores_format, "structured": verifier["scores_format"]["structured"]},
            "locate": locate}},
        "rethink_gvr": {"inputs": ["state", "code", "feedback", "refine_id"], "templates": {
            **rethink, "system": expert_text["refine_thoughts"], "refine": refine}},
    }


def write(checkout: Path, out: Path) -> Path:
    """Write the prompt files into ``out`` and load them back (a broken one fails here)."""
    return write_prompts(prompts(checkout), out)


if __name__ == "__main__":
    prompts_command(__doc__, write)
