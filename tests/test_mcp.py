"""The graphs as MCP tools, called by the real MCP client: `codeforest mcp` over stdio, and `langgraph dev`'s /mcp
endpoint over streamable HTTP. The model is a scripted endpoint."""

from __future__ import annotations

import ast
import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.fake_openai import FakeOpenAI
from tests.langgraph_dev import langgraph_dev

ROOT = Path(__file__).resolve().parent.parent
FIXED = "```python\ndef increment(x):\n    return x + 1\n```"
PROMPT = 'def increment(x: int) -> int:\n    """Return x plus one."""\n'


def stdio_call(log: Path, flags: list[str], calls: list[tuple[str, dict]]) -> tuple[list, list]:
    """Start `codeforest mcp` with ``flags`` as a subprocess, list its tools, make ``calls`` in order; the tools and
    each call's (result, progress messages)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeforest.cli", "mcp", *flags], cwd=ROOT)

    async def session():
        results = []
        with open(log, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                tools = (await client.list_tools()).tools
                for name, arguments in calls:
                    messages = []

                    async def progress(done, total, message, messages=messages):
                        messages.append(message)

                    results.append((await client.call_tool(name, arguments, progress_callback=progress), messages))
        return tools, results

    return asyncio.run(asyncio.wait_for(session(), 180))


def test_codeforest_mcp_lists_every_graph_and_direct_returns_the_program(tmp_path):
    from codeforest.registry import graph_names

    with FakeOpenAI([FIXED]) as api:
        tools, [(result, progress)] = stdio_call(tmp_path / "server.log", ["--base-url", api.url, "--model", "m"], [
            ("direct", {"prompt": PROMPT, "entry_point": "increment", "public_tests": ["assert increment(1) == 2"]})])
    assert [t.name for t in tools] == graph_names(), (tmp_path / "server.log").read_text()[-3000:]
    direct = next(t for t in tools if t.name == "direct")
    assert direct.input_schema["required"] == ["prompt"] and "settings" in direct.input_schema["properties"]
    assert "program" in direct.output_schema["properties"]
    assert not result.is_error, result
    summary, program = (block.text for block in result.content)
    assert program == "def increment(x):\n    return x + 1" == result.structured_content["program"]
    assert summary.startswith("passed 1/1 public tests; stop: passed_public_tests; model calls: 1")
    assert (result.structured_content["public_passed"], result.structured_content["public_total"]) == (1, 1)
    assert "finished: passed_public_tests (final node n1)" in progress
    assert len(api.requests) == 1 and api.requests[0]["model"] == "m"


def test_a_tool_call_gives_each_role_its_model_and_prices_each_models_tokens(tmp_path):
    """`codeforest mcp --role critic=m-critic@URL --price ...`: the critic's calls reach the second endpoint, the
    result counts each model's calls as the endpoints saw them and prices them (11 + 7 scripted tokens a call); the
    direct tool, which calls no Critic, runs on the search model alone."""
    from codeforest.scripted_endpoint import ScriptedEndpoint, any_role_reply

    with ScriptedEndpoint([], respond=any_role_reply) as first, ScriptedEndpoint([], respond=any_role_reply) as second:
        flags = ["--model", "search", "--base-url", first.url, "--role", f"critic=m-critic@{second.url}",
                 "--price", "search=1", "--price", "m-critic=3"]
        problem = {"prompt": PROMPT, "entry_point": "increment", "public_tests": ["assert increment(1) == 2"]}
        _, [(result, _), (direct, _)] = stdio_call(tmp_path / "server.log", flags, [
            ("codetree", {**problem, "settings": {"codetree_max_programs": 2, "structured_output": False}}),
            ("direct", problem)])  # a graph calling no Critic runs without the entry
        asked = {"search": len(first.requests) - 1, "m-critic": len(second.requests)}
    assert not direct.is_error and direct.structured_content["models"] == {"search": {
        "llm_calls": 1, "prompt_tokens": 11, "completion_tokens": 7}}
    assert not result.is_error, (tmp_path / "server.log").read_text()[-3000:]
    models = result.structured_content["models"]
    assert {name: counts["llm_calls"] for name, counts in models.items()} == asked and asked["m-critic"] > 0
    assert {r["model"] for r in second.requests} == {"m-critic"}
    assert result.structured_content["spent"] == pytest.approx(18 * (asked["search"] + 3 * asked["m-critic"]) / 1e6)
    assert "per model: search: " in result.content[0].text


def test_a_bad_call_is_an_error_result_and_the_server_goes_on(tmp_path):
    """An unknown setting, a bad value (its URL's password not echoed), a problem without its function: each an
    error result naming the mistake; then a good call, with a stdio problem and its settings in the call."""
    secret = "http://user:hunter2@127.0.0.1:9/v1"
    with FakeOpenAI(["```python\nprint(int(input()) + 1)\n```"]) as api:
        _, results = stdio_call(tmp_path / "server.log", [], [
            ("direct", {"prompt": PROMPT, "entry_point": "increment", "settings": {"beam_width": 3}}),
            ("direct", {"prompt": PROMPT, "entry_point": "increment", "settings": {"temperature": 9,
                                                                                   "base_url": secret}}),
            ("direct", {"prompt": PROMPT, "public_tests": ["assert increment(1) == 2"]}),
            ("direct", {"prompt": "Read n, print n + 1.", "public_tests": [{"input": "1\n", "output": "2\n"}],
                        "settings": {"base_url": api.url, "model": "m"}})])
    (unknown, _), (bad_value, _), (no_entry, _), (good, _) = results
    assert unknown.is_error and "Unknown setting(s) beam_width" in unknown.content[0].text
    assert bad_value.is_error and "temperature: Input should be less than or equal to 2" in bad_value.content[0].text
    assert "hunter2" not in bad_value.content[0].text
    assert no_entry.is_error and "entry_point is missing" in no_entry.content[0].text
    assert not good.is_error and good.structured_content["program"] == "print(int(input()) + 1)"
    assert good.structured_content["public_passed"] == 1 and len(api.requests) == 1


def test_codeforest_mcp_without_the_sdk_is_one_line_naming_the_extra():
    code = ("import sys\nsys.modules['mcp'] = None  # as when the package is not installed\n"
            "from codeforest.cli import main\nsys.exit(main(['mcp']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        'error: codeforest mcp needs the MCP SDK: pip install -e ".[mcp]" (from a clone)']


@pytest.mark.server
def test_langgraph_dev_serves_direct_as_an_mcp_tool(tmp_path):
    """langgraph dev's /mcp lists each assistant as a tool named after its graph, takes the graph's input (the
    problem) as the arguments and answers with the run's output as text; settings come from the server's
    environment."""
    problem = {"id": "T/inc", "prompt": PROMPT, "kind": "function", "entry_point": "increment",
               "public_tests": ["assert increment(1) == 2"]}

    async def session(url):
        async with streamable_http_client(url + "/mcp") as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            tools = (await client.list_tools()).tools
            return tools, await client.call_tool("direct", {"problem": problem}), await client.call_tool("direct", {})

    with FakeOpenAI([FIXED]) as api, langgraph_dev(tmp_path / "server.log", env={
            "CODEFOREST_BASE_URL": api.url, "CODEFOREST_MODEL": "m"}) as url:
        tools, result, no_problem = asyncio.run(asyncio.wait_for(session(url), 180))
    registered = set(json.loads((ROOT / "langgraph.json").read_text())["graphs"])
    assert {t.name for t in tools} == registered
    direct = next(t for t in tools if t.name == "direct")
    assert direct.input_schema["required"] == ["problem"]
    assert not result.is_error, result
    output = ast.literal_eval(result.content[0].text)  # the server sends the output's repr
    assert output["final_code"] == "def increment(x):\n    return x + 1"
    assert output["public_pass_rate"] == 1.0 and output["stop_reason"] == "passed_public_tests"
    assert len(api.requests) == 1 and api.requests[0]["model"] == "m"
    assert no_problem.is_error


def test_the_servers_role_entries_reach_a_call_whose_graph_calls_them_under_its_settings():
    """A judge entry is dropped for a call at the public selector, which asks no judge, and kept for one that sets
    the differential selector; a call's own roles replace the server's."""
    from codeforest.mcp_server import call_context

    server = {"model": "m", "roles": {"judge": {"model": "j"}, "critic": {"model": "c"}}}

    def roles(graph: str, settings: dict) -> dict:
        return {role: entry.model for role, entry in call_context(graph, server, settings).roles.items()}

    assert roles("resample", {}) == {}
    assert roles("resample", {"selector": "differential"}) == {"judge": "j"}
    assert roles("codetree", {}) == {"critic": "c"}
    assert roles("direct", {"roles": {"critic": {"model": "x"}}}) == {"critic": "x"}
