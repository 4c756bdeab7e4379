"""Thinker: strategies for a problem, and reflections on a failing solution (CodeTree's wording).

BESTER's self-reflection is one free-text answer per call, sampled at a temperature the caller binds.

CodeTree's format is numbered lines, not JSON, so its Thinker parses text. RethinkMCTS's expansion asks for
a JSON list of thoughts with "Reasonableness" priors: with JSON-schema decoding on, its format instruction is
swapped for the same request in the schema's shape (`answer_format.structured`), so prompt and decoder agree.
"""

from __future__ import annotations

import json
import math
import re
from typing import Literal, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from codeforest.agents.base import (
    Reply,
    acts_as,
    call_model,
    call_model_choices,
    messages,
    render_formatted,
    structured_call,
    with_system,
)
from codeforest.problems import Problem
from codeforest.prompts import Prompt
from codeforest.tools.kb_topics import TOPICS

DYNAMIC = {"strategy": "multiple", "reflection": "one or multiple (if there is)"}
_NUMBERED = re.compile(r"^\s*(?:<(\d+)>|\(?(\d+)[.):])\s*(.+?)\s*$")
MIN_ITEM_CHARS = 5  # the released code drops shorter lines
SKIP_THOUGHT = "skip one thought step"  # CodePRM's released stand-in for a thought that cannot be read
ECHO_MIN_CHARS = 20  # shorter text may occur in a prompt's wording by chance


def parse_released(text: str, limit: int) -> list[str]:
    """The released CodeTree's reading (``parse_strategy``): on each line of 5 characters or more, the text after
    its first "N." anywhere (or a leading "<N>"), as written; blank items dropped, at most ``limit``. Unanchored, it
    also reads "-1. The given..." inside a sentence as an item, as the released code does."""
    items = []
    for line in (line for line in text.splitlines() if line.strip() and len(line) >= MIN_ITEM_CHARS):
        found = re.search(r"^\s*<\d+>(.*)", line.strip()) or re.search(r"\d+\.(.*)", line.strip())
        if found and found.group(1).strip():
            items.append(found.group(1))
    return items[:limit]


def parse_numbered(text: str, limit: int) -> list[str]:
    """Numbered lines ("1. ...", "2) ...", "<3> ...") as a list, short ones dropped, at most ``limit``."""
    items = []
    for line in text.splitlines():
        match = _NUMBERED.match(line)
        if match and len(match.group(3)) >= MIN_ITEM_CHARS:
            items.append(match.group(3))
    return items[:limit]


def _ask(model: BaseChatModel, prompt: Prompt, mode: str, system: str, user: str | list[str], width: int,
         fixed: int | None, released: bool = False) -> Reply[list[str]]:
    if fixed is None:  # the template carries its own separator (the released strategy prompt has none)
        system += prompt.render(f"{mode}.dynamic")
    users = [user] if isinstance(user, str) else user
    raw, cost = call_model(model, [SystemMessage(system), *map(HumanMessage, users)])
    items = parse_released(raw, width) if released else parse_numbered(raw, width)
    return Reply(items, raw, cost, parsed=bool(items))


@acts_as("thinker")
def strategies(model: BaseChatModel, prompt: Prompt, problem: Problem, *, width: int = 10,
               fixed: int | None = None, released: bool = False) -> Reply[list[str]]:
    """Strategies for the problem: the model decides how many (capped at ``width``), or exactly ``fixed``."""
    k = str(fixed) if fixed is not None else DYNAMIC["strategy"]
    system = prompt.render(f"strategy.system.{problem['kind']}", k=k)
    user = prompt.render("strategy.user", problem=problem["prompt"])
    return _ask(model, prompt, "strategy", system, user, width, fixed, released)


@acts_as("thinker")
def reflections(model: BaseChatModel, prompt: Prompt, problem: Problem, *, strategy: str, code: str,
                feedback: str, width: int = 10, fixed: int | None = None,
                released: bool = False) -> Reply[list[str]]:
    """Reflections on a node's code and feedback, each a complete fix plan."""
    k = str(fixed) if fixed is not None else DYNAMIC["reflection"]
    split = f"reflection.system.{problem['kind']}"  # a file may word it per problem kind, as the released code
    system = prompt.render(split if prompt.has(split) else "reflection.system", k=k)
    values = {"problem": problem["prompt"], "strategy": strategy, "code": code, "feedback": feedback}
    user = [prompt.render("reflection.user", **values)]
    if prompt.has("reflection.results"):  # the test results as a user message of their own, as released
        user.append(prompt.render("reflection.results", **values))
    return _ask(model, prompt, "reflection", system, user, width, fixed, released)


@acts_as("reflection")
def self_reflection(model: BaseChatModel, prompt: Prompt, problem: Problem, *, code: str,
                    errors: str) -> Reply[str]:
    """BESTER's self-reflection: the issues of a failing program in plain words, no code (App. D).

    Sampling (temperature, seed) is the caller's: bind it to ``model``.
    """
    system = prompt.render("self_reflection.system")
    user = prompt.render("self_reflection.user", problem=problem["prompt"], code=code, errors=errors)
    raw, cost = call_model(model, messages(system, user))
    text = raw.strip()
    # an empty reflection: the repair still gets a sentence
    return Reply(text or "The solution is incorrect.", raw, cost, parsed=bool(text))


THOUGHTS_SCHEMA_ITEM = {"type": "object", "properties": {"thought": {"type": "string", "maxLength": 400},
                                                         "reasonableness": {"type": "number"}},
                        "required": ["thought", "reasonableness"], "additionalProperties": False}


def parse_thoughts(text: str, width: int) -> list[tuple[str, float]]:
    """The paper's JSON list of {"Thought-i": ..., "Reasonableness": ...} dicts, read leniently."""
    candidates = []
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        try:
            loaded = json.loads(text[start:end + 1])
            candidates = loaded if isinstance(loaded, list) else []
        except json.JSONDecodeError:
            candidates = []
    if not candidates:  # dicts without the surrounding list, or a broken list: take each object alone
        for chunk in re.findall(r"\{[^{}]*\}", text):
            try:
                candidates.append(json.loads(chunk))
            except json.JSONDecodeError:
                continue
    items = []
    for entry in candidates:
        if not isinstance(entry, dict):
            continue
        thought = next((str(v) for k, v in entry.items() if str(k).lower().startswith("thought")), None)
        prior = next((v for k, v in entry.items() if str(k).lower().startswith("reasonab")), 1.0)
        if thought and thought.strip():
            items.append((thought.strip(), as_prior(prior)))
    return items[:width]


def parse_released_thoughts(text: str, find_list: bool = False) -> list[tuple[str, float]] | None:
    """A thought list read as the released RethinkMCTS and CodePRM code reads it: the text of its ```json block if
    any (``find_list``, CodePRM: then the first ``[{...}]`` in it), wrapped in ``[]`` when it does not start with
    one; each item's ``Thought-i`` (``i`` its place, from 1) as written and its ``Reasonableness``. ``None`` when
    any of that fails (the released fallback), whatever the items before it held."""
    if "```json" in text:
        text = text.split("```json")[1].split("```")[0]
    try:
        listed = re.search(r"\[\s*{.*?}\s*\]", text, re.S) if find_list else None
        if listed:
            text = listed.group(0)
        elif text.strip()[0] != "[":
            text = "[" + text + "]"
        items = [(entry[f"Thought-{i}"], entry["Reasonableness"]) for i, entry in enumerate(json.loads(text), 1)]
        return [("" + thought, as_prior(prior)) for thought, prior in items]  # "" +: a thought must be a string
    except (IndexError, KeyError, TypeError, json.JSONDecodeError):
        return None


def as_prior(value) -> float:
    """A thought's reasonableness as a number; 1.0 (the released fallback) when it is none, or not finite."""
    try:
        prior = float(value)
    except (TypeError, ValueError):
        return 1.0
    return prior if math.isfinite(prior) else 1.0


def own_words(prompt: Prompt, key: str, formats: str | None = None) -> str:
    """Template ``key`` as written (placeholders unfilled) and its answer formats: the text an echo copies."""
    parts = [prompt.render(key)]
    if formats:
        parts += [prompt.render(f"{formats}.{kind}") for kind in ("text", "structured")
                  if prompt.has(f"{formats}.{kind}")]
    return "\n".join(parts)


def echoed(thought: str, words: str) -> bool:
    """A thought copied from the prompt's own example answer (a small model's habit) is not a thought."""
    return len(thought) >= ECHO_MIN_CHARS and thought in words


@acts_as("thinker")
def thoughts(model: BaseChatModel, prompt: Prompt, problem: Problem, *, previous: str, width: int = 3,
             code: str | None = None, feedback: str | None = None, structured: bool = False,
             feedback_key: str = "expand_with_feedback",
             released: Literal["rethink", "codeprm"] | None = None) -> Reply[list[tuple[str, float]]]:
    """``width`` next (thought, prior) pairs, from the problem and the thoughts so far (and feedback, if any,
    through the ``feedback_key`` template).

    Unreadable replies take the released code's fallback: ``width`` empty thoughts with prior 1.0; so does a
    reply whose every thought copies the prompt's example answer (copied ones are dropped). ``released`` reads
    the list as that released code does instead (``parse_released_thoughts``): every thought as written.
    """
    key = "expand" if feedback is None else feedback_key
    user, structured = render_formatted(prompt, key, "answer_format", structured and not released,
                                        problem=problem["prompt"], thoughts=previous, width=width, code=code or "",
                                        feedback=feedback or "")
    if released:
        raw, cost = call_model(model, with_system(prompt, user))
        items = parse_released_thoughts(raw, find_list=released == "codeprm")
        if items is None:
            return Reply([("\n", 1.0)] * width, raw, cost, parsed=False)
        return Reply(items, raw, cost)
    schema = {"title": "Thoughts", "description": "Next thoughts with their reasonableness.", "type": "object",
              "properties": {"thoughts": {"type": "array", "items": THOUGHTS_SCHEMA_ITEM, "minItems": 1,
                                          "maxItems": width}},
              "required": ["thoughts"], "additionalProperties": False}
    parsed, raw, cost = structured_call(model, with_system(prompt, user), schema, enabled=structured)
    items = []
    if parsed and isinstance(parsed.get("thoughts"), list):
        items = [(str(t.get("thought", "")).strip(), as_prior(t.get("reasonableness", 1.0)))
                 for t in parsed["thoughts"] if isinstance(t, dict) and str(t.get("thought", "")).strip()][:width]
    if not items:
        items = parse_thoughts(raw, width)
    words = own_words(prompt, key, "answer_format")
    items = [(t, p) for t, p in items if not echoed(t, words)]
    if not items:
        return Reply([("\n", 1.0)] * width, raw, cost, parsed=False)
    return Reply(items, raw, cost)


_STEP_MARK = re.compile(r"^[ \t>*#-]*\**\s*Step\s*(\d+)\s*\**\s*[:.)]\**", re.IGNORECASE | re.MULTILINE)


def parse_steps(text: str) -> list[str]:
    """The steps of a reply, split at ``Step n:`` markers (``<step>`` tags ignored, code and topic removed).

    Each step is everything from its marker to the next one, on one line, numbered ``Step i: ...``; a step
    repeating an earlier one word for word is dropped.
    """
    return [f"Step {i}: {body}" for i, (_, body) in enumerate(_numbered_steps(text), 1)]


def _numbered_steps(text: str) -> list[tuple[int, str]]:
    """Each step of a reply with the number the reply gave it (see ``parse_steps``)."""
    text = re.sub(r"<topic>.*?(</topic>|\Z)", "", text, flags=re.S | re.I)
    text = re.sub(r"```.*?(```|\Z)", "", text, flags=re.S)
    text = re.sub(r"</?step>", "\n", text, flags=re.I)
    marks = list(_STEP_MARK.finditer(text))
    steps: list[tuple[int, str]] = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = " ".join(text[mark.end():end].split()).strip(" *")
        if body and body not in (b for _, b in steps):  # a small model may loop: a repeated step adds nothing
            steps.append((int(mark.group(1)), body))
    return steps


def parse_topic(text: str) -> str | None:
    """The topic in ``<topic>`` tags, matched to one of the 14 (case and spacing aside); None if unreadable."""
    match = re.search(r"<topic>(.*?)(?:</topic>|\Z)", text, re.DOTALL | re.IGNORECASE)
    said = " ".join((match.group(1) if match else "").split()).lower().strip(" .-*")
    if not said:
        return None
    return next((t for t in TOPICS if t.lower() == said), None) or \
        next((t for t in TOPICS if t.lower() in said or said in t.lower()), None)


@acts_as("thinker")
def solution_steps(model: BaseChatModel, prompt: Prompt, problem: str, solution: str) -> Reply[dict]:
    """RPM-MCTS's knowledge-base entry: the algorithmic steps of a correct solution and its topic.

    ``value`` is ``{"steps": [...], "topic": ...}``; no readable step is a parse failure, an unreadable
    topic becomes "Other".
    """
    user = prompt.render("user", problem=problem, solution=solution, topics="\n".join(f"- {t}" for t in TOPICS))
    raw, cost = call_model(model, [HumanMessage(user)])
    steps = parse_steps(raw)
    return Reply({"steps": steps, "topic": parse_topic(raw) or "Other"}, raw, cost, parsed=bool(steps))


def released_topic(text: str) -> str | None:
    """The topic as the released RPM-MCTS reads it: the first ``<topic>...</topic>``'s text, stripped, as written (its
    knowledge base filters on that exact text); None when there is none or it is empty (the whole KB)."""
    match = re.search(r"<topic>(.*?)</topic>", text, re.DOTALL)
    return (match.group(1).strip() or None) if match else None


@acts_as("topic")
def classify_topic(model: BaseChatModel, prompt: Prompt, problem: str, released: bool = False) -> Reply[str]:
    """RPM-MCTS's topic of the problem being solved, one of the 14 (unreadable: "Other"); ``released``: read as
    the released code reads it (``released_topic``), unreadable being a parse failure."""
    raw, cost = call_model(model, [HumanMessage(prompt.render("topic", problem=problem,
                                                              topics="\n".join(f"- {t}" for t in TOPICS)))])
    topic = released_topic(raw) if released else parse_topic(raw)
    return Reply(topic or "Other", raw, cost, parsed=topic is not None)


@acts_as("thinker")
def next_step(model: BaseChatModel, prompt: Prompt, problem: str, *, steps: list[str] | str,
              siblings: list[str] | str, reflection: str, released_path: str | None = None) -> Reply[str]:
    """RPM-MCTS's next-step proposer: one new step after ``steps``, unlike its ``siblings`` (sampled by the caller).

    ``steps`` and ``siblings`` are lines (shown one per line, "(none)" for none) or a text the caller laid out.
    The text after "Next step:" (else the whole reply) without code blocks; an empty reply is a parse failure.
    ``released_path`` (the parent's text as the released code holds it): the step read as released
    (``released_proposal``).
    """
    user = prompt.render("next_step", problem=problem, steps=_lines(steps), siblings=_lines(siblings),
                         reflection=reflection or "(none)")
    raw, cost = call_model(model, [HumanMessage(user)])
    if released_path is not None:
        body = released_proposal(raw, released_path)
        return Reply(body, raw, cost, parsed=bool(body))
    text = re.sub(r"```.*?(```|\Z)", "", raw, flags=re.S)
    match = re.search(r"next\s+step\s*:?\s*(.*)", text, re.I | re.S)
    body = " ".join((match.group(1) if match else text).split())
    body = re.sub(r"^\**\s*Step\s*\d+\s*[:.)]\**\s*", "", body, flags=re.I)
    return Reply(body, raw, cost, parsed=bool(body))


def released_proposal(reply: str, path: str) -> str:
    """The step the released RPM-MCTS reads from a proposer's reply (``extract_proposal``, English), as written:
    after "Next step:" (else after the first "Step N:", every "Step N:" removed, else after "Analysis:") up to a
    ``<code>`` tag, one leading "1." numbering dropped (with the rest of its line only, as released), and the
    ``<code>`` tag's content after it. Empty when none is found, or when the step is already in ``path`` (the
    parent's text) without code."""
    code = re.search(r"<code>(.*?)</code>", reply, re.S)
    code = code.group(1).strip() if code else ""
    found, labelled = None, False
    if "Next step" in reply or "Next Step" in reply:
        found = re.search(r"Next [Ss]tep[:]\s*(.*?)(?=<code>|$)", reply, re.S)
    elif "Step" in reply and ":" in reply:
        found, labelled = re.search(r"Step \d+:\s*(.*?)(?=<code>|$)", reply, re.S), True
    elif "Analysis:" in reply:
        found = re.search(r"Analysis:\s*(.*?)(?=<code>|$)", reply, re.S)
    step = found.group(1).strip() if found else ""
    if labelled:
        step = re.sub(r"Step \d+:\s*", "", step).strip()
    if not step:
        return ""
    numbered = re.search(r"^\d\.\s*(.*)", step)
    if numbered:
        step = numbered.group(1)
    if step in path and not code:
        return ""
    return step + (f"\n<code>\n{code}\n</code>" if code else "")


def _lines(items: list[str] | str) -> str:
    """Lines one per line ("(none)" for none), or a text the caller laid out itself, as it is."""
    return items if isinstance(items, str) else "\n".join(items) or "(none)"


class RollOut(NamedTuple):
    """A roll-out's steps: those past the path (grafted into the tree) and the whole solution as written."""

    rolled: list[str]
    written: list[str]  # what the code writer implements (the released code gives it the roller's whole reply)


@acts_as("thinker")
def full_steps(model: BaseChatModel, prompt: Prompt, problem: str, *, steps: list[str],
               wrong: str | None = None, shown: str | None = None) -> Reply[RollOut]:
    """RPM-MCTS's roll-out: the path's steps continued to a complete solution (the path kept as it is); with
    ``wrong`` (a failed program and its reflection), the released code's re-roll-out.

    ``rolled``: the reply's steps numbered past the path's own (a reply may repeat the path, part of it, or none of
    it); a reply numbered without regard to the path keeps the steps after as many as the path has. ``written``: a
    reply starting at Step 1 as it stands (it may have reworded the path), else the path and the rolled steps.
    None readable is a parse failure (the path alone).
    """
    path = _lines(steps) if shown is None else shown  # ``shown``: the path as the caller laid it out
    if wrong is None:
        user = prompt.render("full_steps", problem=problem, steps=path)
    else:
        user = prompt.render("full_steps_reflection", problem=problem, steps=path, wrong=wrong)
    raw, cost = call_model(model, [HumanMessage(user)])
    written = _numbered_steps(raw)
    rolled = [body for number, body in written if number > len(steps)]
    if not rolled:  # e.g. the path repeated with numbers from 1 and then continued from 1 again
        rolled = [body for _, body in written[len(steps):]]
    if written and written[0][0] == 1:  # the whole solution, as the prompt asks
        shown = [f"Step {i}: {body}" for i, (_, body) in enumerate(written, 1)]
    else:
        shown = steps + [f"Step {len(steps) + i}: {body}" for i, body in enumerate(rolled, 1)]
    return Reply(RollOut(rolled, shown), raw, cost, parsed=bool(written))


@acts_as("thinker")
def extract_steps(model: BaseChatModel, prompt: Prompt, reply: str) -> Reply[list[tuple[int, str]]]:
    """The released step extractor: a roll-out's reply broken into ``<step>`` tags by the model; the numbered steps
    of its answer (none readable: a parse failure)."""
    raw, cost = call_model(model, [HumanMessage(prompt.render("extract", steps=reply))])
    steps = _numbered_steps(raw)
    return Reply(steps, raw, cost, parsed=bool(steps))


def step_tags(text: str) -> list[str]:
    """The text of each ``<step>...</step>`` of a reply, as written (the released extractor's reading)."""
    return [body.strip() for body in re.findall(r"<step>(.*?)</step>", text, re.S)]


def tag_step_text(tag: str) -> str:
    """A ``<step>`` tag's step on one line, its own "Step N:" label dropped (the tree's text of a rolled step)."""
    numbered = _numbered_steps(tag)
    return numbered[0][1] if len(numbered) == 1 else " ".join(tag.split())


@acts_as("thinker")
def edit_step(model: BaseChatModel, prompt: Prompt, problem: str, *, steps: list[str] | str,
              wrong: str, released: bool = False) -> Reply[str | None]:
    """The released node editor: a rewritten last step (``<edit>yes</edit>Step n: ...``), or None to keep it.

    An answer without a readable ``<edit>`` tag keeps the step and counts as a parse failure. ``released``: read as
    the released code reads it: an edit when ``yes`` is in the first tag's text (as written, case and all), and the
    step is the rest of the reply as written, stripped (its ``Step n:`` label too; it may be empty).
    """
    path = steps if isinstance(steps, str) else "\n".join(steps)
    raw, cost = call_model(model, [HumanMessage(prompt.render("edit", problem=problem, steps=path, wrong=wrong))])
    if released:
        tag = re.search(r"<edit>(.*?)</edit>", raw, re.S)
        if tag is None:
            return Reply(None, raw, cost, parsed=False)
        edited = raw.replace(f"<edit>{tag.group(1)}</edit>", "").strip()
        return Reply(edited if "yes" in tag.group(1).strip() else None, raw, cost)
    match = re.search(r"<edit>\s*(yes|no)\s*</edit>(.*)", raw, re.I | re.S)
    if match is None:
        return Reply(None, raw, cost, parsed=False)
    body = edited_step_text(match.group(2))
    return Reply(body if match.group(1).lower() == "yes" and body else None, raw, cost)


def edited_step_text(text: str) -> str:
    """An edited step as one line: code blocks dropped, white space joined, its ``Step n:`` label removed."""
    body = " ".join(re.sub(r"```.*?(```|\Z)", "", text, flags=re.S).split())
    return re.sub(r"^\**\s*Step\s*\d+\s*[:.)]\**\s*", "", body, flags=re.I)


@acts_as("thinker")
def one_thought(model: BaseChatModel, prompt: Prompt, problem: Problem, *, previous: str, code: str | None = None,
                feedback: str | None = None, released: bool = False) -> Reply[tuple[str, float] | None]:
    """CodePRM's fallback when a thought list cannot be read: one sampled {"Thought", "Reasonableness"} (the
    caller binds the temperature and seed); ``None`` when this answer cannot be read either. ``released``: the
    reply (or its ```json block) must be that object alone, and its thought is kept as written."""
    raw, cost = call_model(model, one_thought_prompt(prompt, problem, previous, code, feedback))
    value = read_one_thought(raw, prompt, "one" if feedback is None else "one_with_feedback", released)
    return Reply(value, raw, cost, parsed=value is not None)


def one_thought_prompt(prompt: Prompt, problem: Problem, previous: str, code: str | None,
                       feedback: str | None) -> list:
    """The messages asking for one {"Thought", "Reasonableness"}."""
    key = "one_with_feedback" if feedback is not None else "one"
    return with_system(prompt, prompt.render(key, problem=problem["prompt"], thoughts=previous, code=code or "",
                                             feedback=feedback or ""))


@acts_as("thinker")
def sampled_thoughts(model: BaseChatModel, prompt: Prompt, problem: Problem, *, previous: str, n: int,
                     code: str | None = None, feedback: str | None = None, released: bool = False,
                     **settings) -> Reply[list[tuple[str, float] | None]]:
    """CodePRM's fallback as released: one request for ``n`` single thoughts (``settings``: its temperature and
    output limit, no seed), one reading per reply the endpoint gave."""
    replies, cost = call_model_choices(model, one_thought_prompt(prompt, problem, previous, code, feedback), n,
                                       **settings)
    key = "one" if feedback is None else "one_with_feedback"
    values = [read_one_thought(raw, prompt, key, released) for raw in replies]
    return Reply(values, "\n\n".join(replies), cost, parsed=bool(values) and all(values))


def read_one_thought(raw: str, prompt: Prompt, key: str, released: bool) -> tuple[str, float] | None:
    """One {"Thought", "Reasonableness"} answer; ``None`` when it cannot be read (or copies the prompt's example)."""
    body = raw.split("```json")[1].split("```")[0] if "```json" in raw else raw
    if released:
        try:
            loaded = json.loads(body)
            return "" + loaded["Thought"], as_prior(loaded["Reasonableness"])
        except (json.JSONDecodeError, KeyError, TypeError):
            return None
    match = re.search(r"\{.*\}", body, re.S)
    try:
        loaded = json.loads(match.group(0)) if match else None
        value = ((str(loaded["Thought"]).strip(), as_prior(loaded["Reasonableness"])) if isinstance(loaded, dict)
                 else None)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        value = None
    if value is not None and (not value[0] or echoed(value[0], own_words(prompt, key))):
        value = None
    return value


@acts_as("thinker")
def chain_step(model: BaseChatModel, prompt: Prompt, problem: Problem, *, previous: str) -> Reply[str]:
    """CodePRM's Best-of-N: the next thought of a chain in one or two sentences (sampled by the caller)."""
    user = prompt.render("step", problem=problem["prompt"], thoughts=previous)
    raw, cost = call_model(model, with_system(prompt, user))
    text = re.sub(r"```.*?(```|\Z)", "", raw, flags=re.S)
    text = re.sub(r"^\s*(\d+\s*-\s*)?thought\s*\d*\s*:\s*", "", text.strip(), flags=re.I)
    text = " ".join(text.split())
    return Reply(text or SKIP_THOUGHT, raw, cost, parsed=bool(text))
