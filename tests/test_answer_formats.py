"""With JSON-schema decoding on, every prompt states the schema's format, and only the schema's (issue 17).

Each agent call that can decode with a schema is sent to a local OpenAI-compatible endpoint; the request's
schema is checked against every JSON example in the prompt it carried. Off, the paper's own wording goes out.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from langchain_openai import ChatOpenAI

from codeforest.agents import critic, thinker, verifier
from codeforest.prompts import load_prompt
from tests.fake_openai import FakeOpenAI
from tests.fakes import RespondingChatModel

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
    "verifier scores": (lambda m, s: verifier.score_thoughts(m, load_prompt("verifier"), "Q", ["a", "b", "c"], "x",
                                                             "f", structured=s),
                        '{"1-Thought": 0.3, "2-Thought": 0.8, "3-Thought": 1.0}', "```json"),
    "verifier scores without code": (
        lambda m, s: verifier.score_thoughts(m, load_prompt("verifier"), "Q", ["a", "b", "c"], None, None,
                                             structured=s),
        '{"1-Thought": 0.3, "2-Thought": 0.8, "3-Thought": 1.0}', "```json"),
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


PAPER_EXAMPLE = "We could use the print function to finish the task in one line: print(2 + 3)"


def test_thought_prompts_show_placeholders_not_the_papers_example_thoughts():
    for name in ("thinker_mcts", "thinker_gvr"):
        prompt = load_prompt(name)
        words = thinker.own_words(prompt, "expand", "answer_format")
        assert "<thought 1 about this problem>" in words and PAPER_EXAMPLE not in words


@pytest.mark.parametrize("structured", [True, False])
def test_thoughts_copied_from_the_prompts_example_are_dropped(structured):
    reply = ('{"thoughts": [{"thought": "<thought 1 about this problem>", "reasonableness": 0.7}, '
             '{"thought": "Add one to x and return it.", "reasonableness": 0.3}]}')
    model = RespondingChatModel(respond=lambda messages: reply)
    out = thinker.thoughts(model, load_prompt("thinker_mcts"), PROBLEM, previous="", width=3, structured=structured)
    assert out.value == [("Add one to x and return it.", 0.3)] and out.parsed


def test_a_reply_that_only_copies_the_example_takes_the_fallback(tmp_path):
    # a user's prompt file with the paper's own example: its copy is dropped too
    paper = load_prompt("thinker_mcts").templates["answer_format"]["text"].replace(
        "<thought 1 about this problem>", PAPER_EXAMPLE)
    (tmp_path / "thinker_mcts.yaml").write_text(json.dumps({
        "inputs": ["problem", "thoughts", "width", "answer_format"],
        "templates": {"expand": "{problem}{thoughts}\n{answer_format}", "answer_format": {"text": paper}}}),
        encoding="utf-8")
    copied = json.dumps([{"Thought-1": PAPER_EXAMPLE, "Reasonableness": 0.7}])
    model = RespondingChatModel(respond=lambda messages: copied)
    out = thinker.thoughts(model, load_prompt("thinker_mcts", tmp_path), PROBLEM, previous="", width=2)
    assert out.value == [("\n", 1.0)] * 2 and not out.parsed  # the released fallback, counted


def test_a_single_sampled_thought_copied_from_the_example_is_unread():
    model = RespondingChatModel(respond=lambda messages: '{"Thought": "<a thought about this problem>", '
                                                         '"Reasonableness": 0.7}')
    out = thinker.one_thought(model, load_prompt("thinker_gvr"), PROBLEM, previous="")
    assert out.value is None and not out.parsed
    assert not thinker.echoed("Add one.", "Add one. <a thought about this problem>")  # too short to be a copy


@pytest.mark.parametrize("reasonableness", ["NaN", "Infinity", '"high"'])
def test_a_single_sampled_thought_with_an_unreadable_reasonableness_gets_prior_one(reasonableness):
    model = RespondingChatModel(respond=lambda messages: '{"Thought": "Add one.", "Reasonableness": '
                                                         + reasonableness + '}')
    out = thinker.one_thought(model, load_prompt("thinker_gvr"), PROBLEM, previous="")
    assert out.value == ("Add one.", 1.0) and out.parsed


@pytest.mark.parametrize("reasonableness", ['"high"', "null", "[0.5]", '"nan"', "NaN"])
def test_a_schema_reply_with_an_unreadable_reasonableness_keeps_its_thought_at_prior_one(reasonableness):
    """An endpoint that does not enforce the schema may send any value there: the thought stays, prior 1.0."""
    reply = '{"thoughts": [{"thought": "Add one.", "reasonableness": ' + reasonableness + '}]}'
    api = FakeOpenAI([reply])
    try:
        out = thinker.thoughts(ChatOpenAI(base_url=api.url, api_key="not-needed", model="fake", max_retries=0),
                               load_prompt("thinker_mcts"), PROBLEM, previous="", width=3, structured=True)
    finally:
        api.close()
    assert "response_format" in api.requests[0]
    assert out.value == [("Add one.", 1.0)] and out.parsed


@pytest.mark.parametrize("name", list(CALLS))
def test_a_schema_reply_cut_off_at_its_output_limit_is_read_as_unconstrained_text(name):
    """The OpenAI client raises on a structured reply that stopped at ``max_tokens`` (APPS/1474 under
    rethink_mcts, a 256-token limit): the agent reads what came as it reads a reply sent without a schema (its
    fallback when it cannot), and counts the call."""
    call, reply, _ = CALLS[name]
    cut = reply[: len(reply) // 2]
    outs = []
    for structured, faults in ((True, ["length"]), (False, [])):
        api = FakeOpenAI([cut], faults=faults)
        try:
            outs.append(call(ChatOpenAI(base_url=api.url, api_key="not-needed", model="fake", max_retries=0),
                             structured))
        finally:
            api.close()
        assert ("response_format" in api.requests[0]) is structured and len(api.requests) == 1
    cut_off, unconstrained = outs
    assert (cut_off.value, cut_off.raw, cut_off.parsed) == (unconstrained.value, cut, unconstrained.parsed)
    assert cut_off.cost == unconstrained.cost and cut_off.cost["prompt_tokens"] == 11


@pytest.mark.parametrize("name", list(CALLS))
def test_a_schema_reply_cut_off_at_its_output_limit_is_kept_in_the_response_cache(name, tmp_path):
    """The client raises instead of handing LangChain that reply, so LangChain cannot cache it: it is stored under
    the key its call missed with, and a replay of the run reads it as the run did, with no call to the model."""
    from codeforest.tools.cache import SQLiteResponseCache

    call, reply, _ = CALLS[name]
    cut = reply[: len(reply) // 2]
    outs, asked = [], []
    for replies, faults in (([cut], ["length"]), ([reply], [])):  # the replay's endpoint would answer in full
        api = FakeOpenAI(replies, faults=faults)
        try:
            model = ChatOpenAI(base_url=api.url, api_key="not-needed", model="fake", max_retries=0,
                               cache=SQLiteResponseCache(tmp_path / "responses.sqlite"))
            outs.append(call(model, True))
        finally:
            api.close()
        asked.append(len(api.requests))
    made, replayed = outs
    assert asked == [1, 0]
    assert (replayed.value, replayed.raw, replayed.parsed) == (made.value, cut, made.parsed)
    assert {k: replayed.cost[k] for k in ("llm_calls", "prompt_tokens", "completion_tokens")} == \
        {k: made.cost[k] for k in ("llm_calls", "prompt_tokens", "completion_tokens")}
    assert replayed.cost.get("cached_calls") == 1 and "cached_calls" not in made.cost
