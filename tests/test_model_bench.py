"""bench-model: recording role calls from a graph, the per-setting summary, and one real replay (0.5B)."""

from __future__ import annotations

import json

import pytest

from codeforest.api import solve
from codeforest.loading import load_dataset
from codeforest.model_bench import (
    PACKAGED_CALLS,
    SETTINGS,
    RecordingChatModel,
    bench_model,
    markdown,
    pick_calls,
    read_calls,
    record_calls,
    replay,
    summarize,
)
from tests.fakes import ScriptedChatModel, code_reply

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2"]}


def test_recording_keeps_each_call_with_its_graph_node():
    recorder = RecordingChatModel(inner=ScriptedChatModel.of(code_reply("def inc(x):\n    return x + 1")))
    out = solve(PROBLEM, "direct", model=recorder)
    assert out["public_pass_rate"] == 1.0
    (call,) = recorder.calls
    assert call["node"] == "solve" and call["messages"][-1]["role"] == "user"
    assert "def inc(x)" in call["messages"][-1]["content"] and "return x + 1" in call["reply"]
    assert call["max_tokens"] == 4096  # the per-role limit of a program, as the graph bound it


def test_pick_calls_keeps_a_few_of_each_node_in_order():
    calls = [{"node": n, "i": i} for i, n in enumerate(["a", "b", "a", "a", "b", "c"])]
    picked = pick_calls(calls, "g", 2)
    assert [(c["role"], c["i"]) for c in picked] == [("g/a", 0), ("g/b", 1), ("g/a", 2), ("g/b", 4), ("g/c", 5)]


def row(role, text, prompt=(100, 50.0), decode=(40, 2000.0)):
    return {"role": role, "text": text, "prompt_n": prompt[0], "prompt_ms": prompt[1], "decode_n": decode[0],
            "decode_ms": decode[1], "wall_s": 1.0}


def test_summary_rates_per_role_and_differing_replies():
    reference = [row("g/solve", "A"), row("g/critic", "B")]
    run = {"setting": "x", "wall_s": 9.0, "peak_rss_mb": 900,
           "calls": [row("g/solve", "A", decode=(40, 1000.0)), row("g/critic", "C", prompt=(300, 100.0))]}
    line = summarize(run, reference)
    assert line["roles"]["g/solve"] == {"prompt_tps": 2000.0, "decode_tps": 40.0}
    assert line["roles"]["g/critic"] == {"prompt_tps": 3000.0, "decode_tps": 20.0}
    assert line["prompt_tps"] == 2666.7 and line["decode_tps"] == round(80 / 3.0, 1) and line["differ"] == [1]
    report = {"calls": 2, "baseline_self_mismatch": 0,
              "lines": [{**summarize({**run, "calls": reference}, reference), "output_preserving": True},
                        {**line, "output_preserving": False}]}
    table = markdown(report)
    assert "| x | 9.0 | 1.00x |" in table and "| 1 of 2 | no |" in table


@pytest.mark.parametrize("slots", [1, 3])
def test_replay_sends_slots_calls_at_a_time_and_keeps_each_reply_with_its_call(slots):
    from codeforest.scripted_endpoint import ScriptedEndpoint

    calls = [{"role": f"g/r{i}", "messages": [{"role": "user", "content": f"call {i}"}]} for i in range(6)]
    with ScriptedEndpoint([], delay=0.3, respond=lambda body: body["messages"][-1]["content"].upper()) as fake:
        rows = replay(fake.url.removesuffix("/v1"), calls, slots=slots)
    assert [(r["role"], r["text"]) for r in rows] == [(f"g/r{i}", f"CALL {i}") for i in range(6)]
    assert fake.peak_in_flight == slots


def test_the_packaged_calls_cover_the_search_roles():
    calls = read_calls(PACKAGED_CALLS)
    roles = {c["role"] for c in calls}
    assert len(calls) >= 8 and all(c["messages"] and c["role"].count("/") == 1 for c in calls)
    graphs = {r.split("/")[0] for r in roles}
    assert {"codetree", "bester"} <= graphs and len(roles) >= 5


def test_the_packaged_calls_ship_in_the_wheel():
    """A wheel holds only the listed package data: the default --calls file must be among it, beside tools."""
    import tomllib
    from pathlib import Path

    import codeforest.tools

    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert PACKAGED_CALLS.parent == Path(codeforest.tools.__file__).resolve().parent
    assert PACKAGED_CALLS.name in pyproject["tool"]["setuptools"]["package-data"]["codeforest.tools"]


def test_every_setting_names_real_server_fields():
    import xllamacpp

    from codeforest.tools.models import apply_tuning

    for tuning in SETTINGS.values():
        apply_tuning(xllamacpp.CommonParams(), tuning)


@pytest.mark.real_model
def test_record_and_replay_with_the_small_model(fixtures, tmp_path):
    from codeforest.context import Context
    from codeforest.tools.models import EMBEDDED, ensure_model_file

    problem = load_dataset(str(fixtures / "functions.jsonl"))[0].problem
    calls = record_calls(["direct"], [problem], Context(model="small", max_tokens=64), per_node=1)
    assert [c["role"] for c in calls] == ["direct/solve"] and calls[0]["max_tokens"] == 64
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in calls))
    report = bench_model(ensure_model_file(EMBEDDED["small"]), path, ["ngram_simple"])
    assert [line["setting"] for line in report["lines"]] == ["baseline", "baseline (again)", "ngram_simple"]
    first = report["lines"][0]
    assert first["differ"] == [] and first["decode_tps"] > 0 and first["peak_rss_mb"] > 100
    assert report["baseline_self_mismatch"] == len(report["lines"][1]["differ"])


def test_the_embedded_server_settings_come_from_the_defaults_or_the_environment(monkeypatch):
    from codeforest.tools.models import DEFAULT_TUNING, TUNING_ENV, ModelError, tuning_from_env

    monkeypatch.delenv(TUNING_ENV, raising=False)
    assert tuning_from_env() == DEFAULT_TUNING and SETTINGS["codeforest_default"] == DEFAULT_TUNING
    monkeypatch.setenv(TUNING_ENV, "{}")  # llama.cpp's stock server, the "before" of a comparison
    assert tuning_from_env() == {}
    monkeypatch.setenv(TUNING_ENV, '{"n_batch": 512}')
    assert tuning_from_env() == {"n_batch": 512}
    for bad in ("n_batch=512", "[1]"):
        monkeypatch.setenv(TUNING_ENV, bad)
        with pytest.raises(ModelError, match=TUNING_ENV):
            tuning_from_env()
