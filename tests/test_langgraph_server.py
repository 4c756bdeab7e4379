"""A real `langgraph dev` server, driven with langgraph_sdk, running the direct graph on the real model."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from tests.langgraph_dev import langgraph_dev
from tests.test_native import foreign

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.server, pytest.mark.real_model]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with langgraph_dev(tmp_path_factory.mktemp("langgraph") / "server.log") as url:
        yield url


def test_assistants_list_every_registered_graph(server):
    import json

    client = get_sync_client(url=server)
    graphs = {a["graph_id"] for a in client.assistants.search()}
    registered = set(json.loads((ROOT / "langgraph.json").read_text())["graphs"])
    assert registered == graphs and "direct" in graphs


def test_studio_gets_each_graphs_input_form_and_only_its_own_settings(server):
    client = get_sync_client(url=server)
    for assistant in client.assistants.search():
        schemas = client.assistants.get_schemas(assistant["assistant_id"])
        assert schemas["input_schema"]["required"] == ["problem"], assistant["graph_id"]
        assert "final_code" in schemas["output_schema"]["properties"]
        settings = set(schemas["context_schema"]["properties"])
        assert "model" in settings
        assert not any(foreign(f, assistant["graph_id"]) for f in settings), assistant["graph_id"]


def test_run_direct_on_a_problem_with_the_real_model(server):
    client = get_sync_client(url=server)
    problem = {"id": "T/inc", "prompt": 'def increment(x: int) -> int:\n    """Return x plus one."""\n',
               "kind": "function", "entry_point": "increment", "public_tests": ["assert increment(1) == 2"]}
    out = client.runs.wait(None, "direct", input={"problem": problem}, context={"model": "small"})
    assert out["public_pass_rate"] == 1.0, out
    assert out["stop_reason"] == "passed_public_tests" and "def increment" in out["final_code"]
    assert out["cost"]["llm_calls"] == 1 and out["nodes"]["n1"]["execution"]["total"] == 1


def test_bester_streams_its_rounds_through_the_server(server):
    """BESTER's Send branches and progress events through the server, against a scripted endpoint."""
    from tests.fake_openai import FakeOpenAI

    failing = "```python\ndef increment(x):\n    return x\n```"
    fixed = "```python\ndef increment(x):\n    return x + 1\n```"
    api = FakeOpenAI([failing, "The solution is incorrect because it returns x.",
                      "The solution is incorrect because it forgets to add one.", fixed, fixed])
    problem = {"id": "T/inc", "prompt": 'def increment(x: int) -> int:\n    """Return x plus one."""\n',
               "kind": "function", "entry_point": "increment", "public_tests": ["assert increment(1) == 2"]}
    context = {"base_url": api.url, "model": "fake", "bester_width": 2, "bester_depth": 1, "bester_concurrency": 2}
    try:
        client = get_sync_client(url=server)
        events, final = [], None
        for chunk in client.runs.stream(None, "bester", input={"problem": problem}, context=context,
                                        stream_mode=["custom", "values"]):
            if chunk.event == "custom":
                events.append(chunk.data["event"])
            elif chunk.event == "values":
                final = chunk.data
    finally:
        api.close()
    assert final["stop_reason"] == "solved" and final["final_node"] == "n2" and "x + 1" in final["final_code"]
    assert final["cost"]["llm_calls"] == 5 and len(api.requests) == 5
    assert {r.get("seed") for r in api.requests if r.get("temperature") == 0.8} == {1, 2}
    assert events.count("selected") == 2 and events[-1] == "finished"
