"""The record/replay endpoint: what a reply is found by, replies in order, misses logged with a diff, and a graph
replayed from its own recording making the same calls and returning the same program."""

from __future__ import annotations

import json

import httpx
import pytest

from codeforest.api import solve
from codeforest.jsonl import read_records
from codeforest.recorder import MISS_STATUS, Recorder, replay_key
from codeforest.scripted_endpoint import ScriptedEndpoint, any_role_reply

PROBLEM = {"id": "T/1", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}


def ask(url: str, content: str, **settings) -> httpx.Response:
    return httpx.post(url + "/chat/completions", timeout=30,
                      json={"model": "m", "messages": [{"role": "user", "content": content}], **settings})


def test_the_key_is_messages_and_sampling_settings_with_openai_defaults():
    base = {"messages": [{"role": "user", "content": "hi"}], "temperature": 1.0}
    assert replay_key(base) == replay_key({**base, "temperature": None, "model": "other", "timeout": 3, "seed": 1})
    assert replay_key({**base, "max_completion_tokens": 50}) == replay_key({**base, "max_tokens": 50})
    assert replay_key({**base, "stop": "\n"}) == replay_key({**base, "stop": ["\n"]})
    assert replay_key({**base, "temperature": 0}) == replay_key({**base, "temperature": 0.0})  # int or float
    assert replay_key({**base, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}) == \
        replay_key(base)
    for changed in ({"temperature": 0.0}, {"top_p": 0.9}, {"n": 2}, {"max_tokens": 10},
                    {"messages": [{"role": "system", "content": "hi"}]}):
        assert replay_key({**base, **changed}) != replay_key(base), changed


def test_a_prompt_asked_again_gets_its_recorded_replies_in_order_and_a_miss_is_logged_with_a_diff(tmp_path):
    log = tmp_path / "calls.jsonl"
    with ScriptedEndpoint(["first", "second", "other"]) as model, Recorder(log, upstream=model.url) as recorder:
        assert [ask(recorder.url, "write f").json()["choices"][0]["message"]["content"] for _ in range(2)] == \
            ["first", "second"]
        assert ask(recorder.url, "write g", temperature=0).status_code == 200
    assert len(read_records(log)[0]) == 3 and recorder.answered == 3

    with Recorder(log) as replay:
        replies = [ask(replay.url, "write f").json()["choices"][0]["message"]["content"] for _ in range(2)]
        assert replies == ["first", "second"]
        used_up = ask(replay.url, "write f")
        changed = ask(replay.url, "write g, please", temperature=0)
    assert used_up.status_code == MISS_STATUS and "every recorded reply" in used_up.json()["error"]["message"]
    assert changed.status_code == MISS_STATUS and "no recorded request" in changed.json()["error"]["message"]
    misses = read_records(replay.misses)[0]
    assert [m["used_up"] for m in misses] == [True, False]
    assert "-write g\n+write g, please" in misses[1]["diff"] and json.loads(misses[1]["nearest"])["temperature"] == 0
    assert (replay.answered, replay.missed) == (2, 2)
    assert [hit for _, hit in replay.trace] == [True, True, False, False]


def test_a_reply_later_than_the_timeout_is_answered_504_and_not_recorded(tmp_path):
    log = tmp_path / "calls.jsonl"
    with ScriptedEndpoint(["late", "in time"], delay=1.0) as model, \
            Recorder(log, upstream=model.url, timeout=0.3) as recorder:
        late = ask(recorder.url, "write f")
        recorder.timeout = 10.0
        again = ask(recorder.url, "write f")
    assert late.status_code == 504 and "no reply within 0.3 s" in late.json()["error"]["message"]
    assert again.json()["choices"][0]["message"]["content"] == "in time"
    assert [record["response"]["choices"][0]["message"]["content"] for record in read_records(log)[0]] == ["in time"]


def test_a_reply_that_comes_after_its_client_stopped_waiting_is_not_recorded(tmp_path):
    log = tmp_path / "calls.jsonl"
    with ScriptedEndpoint(["late", "in time"], delay=1.0) as model, Recorder(log, upstream=model.url) as recorder:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(recorder.url + "/chat/completions", timeout=0.3,
                       json={"model": "m", "messages": [{"role": "user", "content": "write f"}]})
        again = ask(recorder.url, "write f")  # asked again, as a client does after its time-out
    assert again.json()["choices"][0]["message"]["content"] == "in time" and len(model.requests) == 2
    assert [record["response"]["choices"][0]["message"]["content"] for record in read_records(log)[0]] == ["in time"]


def test_a_recording_stopped_half_way_resumes_from_its_log(tmp_path):
    log = tmp_path / "calls.jsonl"
    with ScriptedEndpoint(["first"]) as model, Recorder(log, upstream=model.url) as recorder:
        ask(recorder.url, "write f")
    with ScriptedEndpoint(["fresh"]) as model, Recorder(log, upstream=model.url) as recorder:
        again = ask(recorder.url, "write f").json()["choices"][0]["message"]["content"]
        assert model.requests == []  # answered from the log
        later = ask(recorder.url, "write f").json()["choices"][0]["message"]["content"]
    assert (again, later) == ("first", "fresh") and len(model.requests) == 1
    assert [r["response"]["choices"][0]["message"]["content"] for r in read_records(log)[0]] == ["first", "fresh"]


def test_a_model_named_by_its_path_is_recorded_by_its_file_name(tmp_path):
    log, models = tmp_path / "calls.jsonl", tmp_path / "home" / ".cache" / "models"
    with ScriptedEndpoint(["fine"]) as model, Recorder(log, upstream=model.url) as recorder:
        httpx.post(recorder.url + "/chat/completions", timeout=30, json={
            "model": str(models / "coder.gguf"), "messages": [{"role": "user", "content": "x"}]})
    assert read_records(log)[0][0]["response"]["model"] == "coder.gguf" and str(models) not in log.read_text()


def test_an_upstream_error_passes_through_unrecorded(tmp_path):
    log = tmp_path / "calls.jsonl"
    with ScriptedEndpoint(["fine"], faults=["500"]) as model, Recorder(log, upstream=model.url) as recorder:
        assert ask(recorder.url, "x").status_code == 500
        assert ask(recorder.url, "x").status_code == 200
    assert [r["response"]["choices"][0]["message"]["content"] for r in read_records(log)[0]] == ["fine"]


def test_a_request_asking_for_logprobs_gets_one_entry_per_token_as_llama_cpp_gives_them(tmp_path):
    log = tmp_path / "calls.jsonl"
    with ScriptedEndpoint(["def f():\n    return 1"] * 2) as model, Recorder(log, upstream=model.url) as recorder:
        plain = ask(recorder.url, "a").json()["choices"][0]
        asked = ask(recorder.url, "b", logprobs=True, top_logprobs=1).json()["choices"][0]
    assert "logprobs" not in plain
    tokens = [entry["token"] for entry in asked["logprobs"]["content"]]
    assert tokens == ["def", " f():", "\n    return", " 1"] and "".join(tokens) == asked["message"]["content"]
    assert asked["logprobs"]["content"][1]["bytes"] == list(b" f():")
    assert asked["logprobs"]["content"][1]["top_logprobs"][0]["token"] == " f():"
    assert read_records(log)[0][1]["response"]["choices"][0]["logprobs"] == asked["logprobs"]  # recorded as given


@pytest.mark.parametrize("graph, budget", [("codetree", {"codetree_max_programs": 4}),
                                           ("rethink_mcts", {"rethink_rollouts": 3})])
def test_a_search_replayed_from_its_recording_makes_the_same_calls_and_returns_the_same_program(tmp_path, graph,
                                                                                                 budget):
    log = tmp_path / "calls.jsonl"
    settings = {"model": "m", **budget}
    with ScriptedEndpoint([], respond=any_role_reply) as model, Recorder(log, upstream=model.url) as recorder:
        recorded = solve(PROBLEM, graph, context={**settings, "base_url": recorder.url})
    calls = len(read_records(log)[0])
    assert calls == recorded["cost"]["llm_calls"] > 3

    with Recorder(log) as replay:
        replayed = solve(PROBLEM, graph, context={**settings, "base_url": replay.url})
    assert (replay.answered, replay.missed) == (calls, 0)
    assert replayed["final_code"] == recorded["final_code"] and replayed["stop_reason"] == recorded["stop_reason"]
    assert sorted(replayed["nodes"]) == sorted(recorded["nodes"])

    with Recorder(log) as replay:  # another setting changes what is asked: the first divergence is logged
        diverged = solve(PROBLEM, graph, context={**settings, "base_url": replay.url, "temperature": 0.5})
    assert replay.missed == 1 and diverged["stop_reason"] == "model_error"  # a miss is not retried
    first = read_records(replay.misses)[0][0]
    assert "-temperature=0.0" in first["diff"] and "+temperature=0.5" in first["diff"]
