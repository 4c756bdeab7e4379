"""With JSON-schema decoding on, every prompt states the schema's format, and only the schema's (issue 17).

Each agent call that can decode with a schema is sent to a local OpenAI-compatible endpoint; the request's
schema is checked against every JSON example in the prompt it carried. Off, the paper's own wording goes out.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from langchain_openai import ChatOpenAI

from codeforest.agents import critic, thinker
from codeforest.prompts import load_prompt
from tests.fake_openai import FakeOpenAI

PROBLEM = {"id": "T/inc", "prompt": "def inc(x):\n    return x plus one\n", "kind": "function", "entry_point": "inc"}

CALLS = {
    "rethink thoughts": (lambda m, s: thinker.thoughts(m, load_prompt("thinker_mcts"), PROBLEM, previous="",
                                                       width=3, structured=s),
                         '{"thoughts": [{"thought": "Add one.", "reasonableness": 1.0}]}', "Thought-i"),
    "rethink thoughts after feedback": (
        lambda m, s: thinker.thoughts(m, load_prompt("thinker_mcts"), PROBLEM, previous="", width=3, code="x",
                                      feedback="failed", structured=s),
        '{"thoughts": [{"thought": "Add one.", "reasonableness": 1.0}]}', "Thought-i"),
    "gvr thoughts": (lambda m, s: thinker.thoughts(m, load_prompt("thinker_gvr"), PROBLEM, previous="", width=3,
                                                   structured=s),
                     '{"thoughts": [{"thought": "Add one.", "reasonableness": 1.0}]}', "Thought-i"),
    "codetree score": (lambda m, s: critic.score_tests(m, load_prompt("critic"), PROBLEM, code="x", feedback="f",
                                                       structured=s),
                       '{"analysis": "close", "score": 4}', "on the last line a single integer"),
    "codetree verdict": (lambda m, s: critic.verify(m, load_prompt("critic"), PROBLEM, code="x", feedback="f",
                                                    structured=s),
                         '{"analysis": "fine", "verdict": true}', 'on a new line "True"'),
    "rethink self-evaluation": (lambda m, s: critic.self_evaluate(m, load_prompt("critic_mcts"), PROBLEM,
                                                                  thoughts="", code="x", structured=s),
                                '{"evaluation": 0.5, "explanation": "ok"}', None),
    "rethink blocks": (lambda m, s: critic.analyze_blocks(m, load_prompt("critic_mcts"), PROBLEM, code="x",
                                                          test="assert inc(1) == 2", output="3", trace="[BLOCK-0]",
                                                          structured=s),
                       '{"blocks": [{"block": "BLOCK-0", "correct": false, "explanation": "x"}]}',
                       '"correct": "True"'),
}


def json_examples(text: str) -> list:
    """Every JSON object written in a text, or list holding one (outermost only; "[-1, 1]" is prose)."""
    decoder, found, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                i += 1
                continue
            if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict) for v in value)):
                found.append(value)
            i = end
        else:
            i += 1
    return found


def send(call, reply: str, structured: bool) -> dict:
    api = FakeOpenAI([reply])
    try:
        call(ChatOpenAI(base_url=api.url, api_key="not-needed", model="fake", max_retries=0), structured)
    finally:
        api.close()
    return api.requests[0]


def prompt_text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"])


@pytest.mark.parametrize("name", list(CALLS))
def test_structured_prompt_examples_follow_the_schema(name):
    call, reply, text_format = CALLS[name]
    body = send(call, reply, structured=True)
    schema = body["response_format"]["json_schema"]["schema"]
    examples = json_examples(prompt_text(body))
    assert examples, "the prompt shows the answer's shape"
    for example in examples:
        jsonschema.validate(example, schema)
    if text_format:
        assert text_format not in prompt_text(body)


@pytest.mark.parametrize("name", [n for n, c in CALLS.items() if c[2]])
def test_without_schema_decoding_the_papers_format_goes_out(name):
    call, reply, text_format = CALLS[name]
    body = send(call, reply, structured=False)
    assert "response_format" not in body
    assert text_format in prompt_text(body)


def test_a_prompt_file_that_writes_its_format_inline_is_answered_without_a_schema(tmp_path):
    """A user's file in the old shape (no {answer_format}) keeps its own format: no schema contradicts it."""
    packaged = load_prompt("thinker_mcts")
    inline = packaged.templates["expand"].replace("{answer_format}", packaged.templates["answer_format"]["text"])
    (tmp_path / "thinker_mcts.yaml").write_text(json.dumps(
        {"inputs": ["problem", "thoughts", "width"], "templates": {"expand": inline}}), encoding="utf-8")
    reply = '[{"Thought-1": "Add one.", "Reasonableness": 1.0}]'
    body = send(lambda m, s: thinker.thoughts(m, load_prompt("thinker_mcts", tmp_path), PROBLEM, previous="",
                                              width=3, structured=s), reply, structured=True)
    assert "response_format" not in body and "list of dicts" in prompt_text(body)
