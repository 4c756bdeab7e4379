"""Every graph as LangChain and LangGraph users expect it: schemas, as_tool, subgraphs, streaming, reused
threads, the no-public-tests rule, recursion limits, input errors, async fan-out, the messages adapter."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import typing

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from typing_extensions import TypedDict

from codeforest import as_chat_graph, as_solver_tool, problem_from_text
from codeforest.graphs.state import SearchState
from codeforest.registry import build_graph, context_for, graph_module, graph_names, recursion_limit
from tests.fakes import InFlight, RespondingChatModel, ScriptedChatModel

GRAPHS = graph_names()
INC = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
       "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}
DEC = {"id": "T/dec", "prompt": 'def dec(x):\n    """Return x minus one."""\n', "kind": "function",
       "entry_point": "dec", "public_tests": ["assert dec(1) == 0"]}
# small budgets, so a scripted run stays short; the paper defaults are tested in each graph's own tests
SMALL = {"direct": {}, "codetree": {"codetree_max_programs": 5, "codetree_width": 2},
         "rethink_mcts": {"rethink_rollouts": 3, "rethink_width": 2}, "bester": {"bester_depth": 2, "bester_width": 2},
         "rpm_mcts": {"rpm_rollouts": 2, "rpm_width": 2, "rpm_kb": False},
         "gvr": {"gvr_rollouts": 3, "gvr_width": 2}, "gvr_bon": {"gvr_bon_n": 2, "gvr_bon_steps": 2},
         "resample": {"resample_n": 10}, "reflexion": {"bester_depth": 4}}


class Universal:
    """A model that plays every role of every graph; programs are right unless ``wrong`` is set.

    ``flight`` counts its calls in flight and can gather a numbered group of them (``InFlight``)."""

    def __init__(self, wrong: bool = False, delay: float = 0.0, gather: range = range(0), gather_s: float = 10.0):
        self.wrong, self.delay = wrong, delay
        self.flight = InFlight(gather, gather_s)

    def __call__(self, messages) -> str:
        with self.flight.call():
            time.sleep(self.delay)
            return self.reply("\n".join(str(m.content) for m in messages))

    def reply(self, text: str) -> str:
        roles = [("Reasonableness", json.dumps([{"Thought-1": "Add one.", "Reasonableness": 0.6},
                                                {"Thought-2": "Add one again.", "Reasonableness": 0.4}])),
                 ("correctness score in range [-1, 1]", "0.5"), ("provide a new Thought to replace", "Add one."),
                 ("block by block", "[]"), ("provides strategies", "1. Add one to x.\n2. Add two to x."),
                 ("Reflect on the implementation", "1. Add one.\n2. Add two."), ("code reviewer", "Fine.\nTrue"),
                 ("Score from 0 to 5", "Close.\n3"), ("experienced at identifying issues", "It is off by one."),
                 ("correct **next step**", "Next step: Add one to x."), ("act as an evaluator", "<score>6</score>"),
                 ("complete all remaining steps", "Step 1: Add one to x.\nStep 2: Return it."),
                 ("Test case debug information", "<step_n>2</step_n> Add one, not zero."),
                 ("Execute results on test cases", "Looks right.\n<evaluation>9.5</evaluation>"),
                 ("judge the correctness of each thought", '{"1-Thought": 0.9, "2-Thought": 0.8, "3-Thought": 0.7}'),
                 ("Revise and enhance the", "Add one."), ("offer ONE more further thought step", "Add one.")]
        for marker, answer in roles:
            if marker in text:
                return answer
        name, body = ("dec", "x - 1") if "def dec" in text else ("inc", "x + 1")
        return f"```python\ndef {name}(x):\n    return {'x' if self.wrong else body}\n```"


PREFIXES = (("gvr_bon_", "gvr_bon"), ("gvr_", "gvr"), ("codetree_", "codetree"), ("rethink_", "rethink_mcts"),
            ("bester_", "bester"), ("rpm_", "rpm_mcts"), ("resample_", "resample"))


PRESET_OF = {"reflexion": "bester"}  # a preset graph shows the settings of the graph it presets


def owner_of(setting: str) -> str | None:
    """The graph a method-specific setting belongs to, by its prefix (None: a shared setting)."""
    return next((graph for prefix, graph in PREFIXES if setting.startswith(prefix)), None)


def foreign(setting: str, graph: str) -> bool:
    """True when ``setting`` belongs to another method than ``graph`` (or the graph it presets)."""
    return owner_of(setting) not in (None, graph, PRESET_OF.get(graph))


def run(graph: str, problem: dict, model=None, config=None, **settings):
    model = model or RespondingChatModel(respond=Universal())
    context = context_for(graph, structured_output=False, **{**SMALL[graph], **settings})
    return build_graph(graph, model=model).invoke({"problem": problem}, config, context=context)


@pytest.mark.parametrize("graph", GRAPHS)
def test_input_output_and_context_json_schemas_build(graph):
    compiled = graph_module(graph).graph
    assert compiled.get_input_jsonschema()["required"] == ["problem"]
    problem = compiled.get_input_jsonschema()["$defs"]["Problem"]
    assert {"id", "prompt", "kind", "entry_point", "public_tests"} <= set(problem["required"])
    assert set(compiled.get_output_jsonschema()["properties"]) == {
        "final_code", "final_node", "stop_reason", "public_pass_rate", "error", "nodes", "cost", "selection"}
    context = compiled.get_context_jsonschema()["properties"]
    assert {"model", "roles", "prices", "cost_budget"} <= set(context) and all(context[f].get("description")
                                                                            for f in context)
    assert not any(foreign(f, graph) for f in context), "Studio shows only this graph's settings"


@pytest.mark.parametrize("graph", GRAPHS)
def test_as_tool_runs_the_search(graph):
    tool = build_graph(graph, model=RespondingChatModel(respond=Universal())).as_tool(name=graph, description="x")
    out = tool.invoke({"problem": INC})
    assert "def inc" in out["final_code"] and out["public_pass_rate"] == 1.0


@pytest.mark.parametrize("graph", GRAPHS)
def test_graph_works_as_a_subgraph(graph):
    class Parent(TypedDict, total=False):
        problem: dict
        final_code: str
        stop_reason: str
        note: str

    parent = StateGraph(Parent)
    parent.add_node("search", build_graph(graph, model=RespondingChatModel(respond=Universal())))
    parent.add_node("after", lambda s: {"note": f"got {len(s['final_code'])} characters"})
    parent.add_edge(START, "search")
    parent.add_edge("search", "after")
    parent.add_edge("after", END)
    out = parent.compile().invoke({"problem": INC}, context=context_for(graph, **SMALL[graph]))
    assert "def inc" in out["final_code"] and out["note"].startswith("got ")


@pytest.mark.parametrize("graph", GRAPHS)
def test_astream_updates_and_custom_events(graph):
    model = RespondingChatModel(respond=Universal())
    compiled = build_graph(graph, model=model)

    async def collect():
        return [chunk async for chunk in compiled.astream(
            {"problem": INC}, context=context_for(graph, structured_output=False, **SMALL[graph]),
            stream_mode=["updates", "custom"])]

    chunks = asyncio.run(collect())
    updates = [c for mode, c in chunks if mode == "updates"]
    events = [c["event"] for mode, c in chunks if mode == "custom"]
    assert list(updates[0]) == ["start"] and "finalize" in updates[-2] and "select_final" in updates[-1]
    assert "node_created" in events and "executed" in events and events[-1] == "finished"
    assert updates[-2]["finalize"]["public_pass_rate"] == 1.0


@pytest.mark.parametrize("graph", GRAPHS)
def test_a_reused_thread_starts_from_a_clean_tree_and_cost(graph):
    compiled = build_graph(graph, checkpointer=InMemorySaver(), model=RespondingChatModel(respond=Universal()))
    context = context_for(graph, structured_output=False, **SMALL[graph])
    config = {"configurable": {"thread_id": "shared"}}
    compiled.invoke({"problem": INC}, config, context=context)
    second = compiled.invoke({"problem": DEC}, config, context=context)
    alone = run(graph, DEC)
    assert "def dec" in second["final_code"] and "inc" not in json.dumps(second["nodes"])
    assert second["cost"] == alone["cost"] and second["nodes"].keys() == alone["nodes"].keys()


@pytest.mark.parametrize("graph", GRAPHS)
def test_a_raw_record_given_as_the_problem_keeps_its_hidden_tests_out_of_the_search(graph):
    """A Studio or server user may paste a whole benchmark record: only the five problem fields enter the state."""
    seen = []
    universal = Universal()

    def respond(messages):
        seen.append("\n".join(str(m.content) for m in messages))
        return universal(messages)

    record = {**INC, "private_tests": ["assert inc(41) == 4242"], "solution": "def inc(x): return 4242"}
    compiled = build_graph(graph, checkpointer=InMemorySaver(), model=RespondingChatModel(respond=respond))
    config = {"configurable": {"thread_id": "raw"}}
    out = compiled.invoke({"problem": record}, config, context=context_for(graph, structured_output=False,
                                                                           **SMALL[graph]))
    state = compiled.get_state(config).values
    assert set(state["problem"]) == {"id", "prompt", "kind", "entry_point", "public_tests"} and out["final_code"]
    assert seen and not any("4242" in text for text in seen)


@pytest.mark.parametrize("graph", GRAPHS)
def test_a_problem_without_public_tests_is_never_reported_as_passing(graph):
    out = run(graph, {**INC, "public_tests": []})
    assert out["stop_reason"] == "unverified" and out["public_pass_rate"] is None
    assert "def inc" in out["final_code"] and out["nodes"][out["final_node"]]["execution"]["total"] == 0
    assert not any(n.get("status") == "passed" for n in out["nodes"].values())
    if graph != "codetree":  # CodeTree's node status is its decision (here: the Critic accepted)
        assert out["nodes"][out["final_node"]]["status"] == "unverified"


@pytest.mark.parametrize("graph", [g for g in GRAPHS if g != "direct"])
def test_a_low_recursion_limit_ends_the_search_cleanly(graph):
    events = []
    model = RespondingChatModel(respond=Universal(wrong=True))
    compiled = build_graph(graph, model=model)
    context = context_for(graph, structured_output=False, **SMALL[graph])
    for mode, chunk in compiled.stream({"problem": INC}, {"recursion_limit": 9}, context=context,
                                       stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk)
        else:
            out = chunk
    assert out["stop_reason"] == "step_limit" and out["final_code"] and out["public_pass_rate"] == 0.0
    assert "recursion_limit=9 is below" in events[0]["message"]
    full = run(graph, INC, model=RespondingChatModel(respond=Universal(wrong=True)),
               config={"recursion_limit": recursion_limit(graph, context)})
    assert full["stop_reason"] in ("budget_exhausted", "depth_exhausted")  # the derived limit fits the budget
    with pytest.raises(ValueError, match="recursion_limit=4 is too low"):
        compiled.invoke({"problem": INC}, {"recursion_limit": 4}, context=context)


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("problem, message", [
    ({"id": "x", "prompt": "p", "kind": "function", "public_tests": []}, "problem.entry_point is missing"),
    ({"id": "x", "prompt": "p", "kind": "function", "entry_point": None, "public_tests": []},
     "problem.entry_point is missing"),
    ({"id": "x", "kind": "stdio", "entry_point": None, "public_tests": []}, "problem.prompt is missing"),
    ({"id": "x", "prompt": "p", "kind": "stdio", "entry_point": None, "public_tests": ["1"]}, "stdio problem"),
])
def test_bad_input_names_the_field_before_any_model_call(graph, problem, message):
    model = ScriptedChatModel.of()  # any model call would fail the test: the script is empty
    with pytest.raises(ValueError, match=message):
        build_graph(graph, model=model).invoke({"problem": problem})
    with pytest.raises(ValueError, match="'problem' must be an object"):
        build_graph(graph, model=model).invoke({"problem": "def f(): pass"})
    assert model.calls == []


def test_async_fan_out_is_not_capped_by_the_default_executor():
    """BESTER with 8 reflections at once: under ainvoke all 8 model calls run together (not min(32, cpus+4)),
    on threads other than the event loop's (a node calling the model on the loop would block it)."""
    reflections = range(2, 10)  # after the first program: its 8 reflections, gathered (then 8 repairs)
    universal = Universal(wrong=True, gather=reflections)
    context = context_for("bester", bester_depth=1, bester_width=8, bester_concurrency=8)
    compiled = build_graph("bester", model=RespondingChatModel(respond=universal))

    async def main():
        return threading.get_ident(), await compiled.ainvoke({"problem": INC}, context=context)

    loop_thread, out = asyncio.run(main())
    assert loop_thread not in universal.flight.threads, "a model call ran on the event loop's thread"
    assert universal.flight.peak == 8 and out["cost"]["llm_calls"] == 17
    # sync invoke: LangGraph's executor, as wide as max_concurrency allows
    universal = Universal(wrong=True, gather=reflections)
    build_graph("bester", model=RespondingChatModel(respond=universal)).invoke(
        {"problem": INC}, {"max_concurrency": 8}, context=context)
    assert universal.flight.peak == 8


def test_problem_from_a_chat_message():
    text = ("Please solve this:\n```python\nfrom typing import List\n\ndef total(xs: List[int]) -> int:\n"
            '    """Sum of the list."""\n    pass\n\nassert total([1, 2]) == 3\nassert total([]) == 0\n```')
    problem = problem_from_text(text)
    assert problem["entry_point"] == "total" and problem["kind"] == "function"
    assert problem["public_tests"] == ["assert total([1, 2]) == 3", "assert total([]) == 0"]
    assert problem["prompt"].startswith("from typing import List") and "pass" not in problem["prompt"]
    assert "assert" not in problem["prompt"] and problem["prompt"].rstrip().endswith('"""Sum of the list."""')
    bare = problem_from_text('def inc(x):\n    """Return x plus one."""')
    assert bare["entry_point"] == "inc" and bare["public_tests"] == []
    crlf = problem_from_text(text.replace("\n", "\r\n"))
    assert crlf["entry_point"] == "total" and len(crlf["public_tests"]) == 2
    prose = problem_from_text('Write this:\ndef inc(x):\n    """Return x plus one."""\nIt should pass:\n'
                              "assert inc(1) == 2\nThanks!")
    assert prose["public_tests"] == ["assert inc(1) == 2"] and prose["prompt"].startswith("def inc(x):")
    split = problem_from_text('```python\n    def inc(x):\n        """Plus one."""\n```\nTests:\n'
                              "```python\nassert inc(1) == 2\n```")
    assert split["entry_point"] == "inc" and split["public_tests"] == ["assert inc(1) == 2"]
    with pytest.raises(ValueError, match="no Python function signature"):
        problem_from_text("Write me a poem.")
    for unsupported in ("async def f(x):\n    pass", "class Solution:\n    def two_sum(self, xs):\n        pass"):
        with pytest.raises(ValueError, match="top-level \\(not async, not a method\\)"):
            problem_from_text(unsupported)


@pytest.mark.parametrize("graph", ["direct", "codetree"])
def test_chat_graph_answers_with_the_program(graph):
    chat = as_chat_graph(graph, model=RespondingChatModel(respond=Universal()))
    message = '```python\ndef inc(x):\n    """Return x plus one."""\n\nassert inc(1) == 2\n```'
    events = []
    for mode, chunk in chat.stream({"messages": [HumanMessage(message)]}, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk["event"])
        else:
            final = chunk
    answer = final["messages"][-1]
    assert isinstance(answer, AIMessage) and "```python\ndef inc(x):\n    return x + 1\n```" in answer.content
    assert "100% of the public tests passed" in answer.content and "finished" in events
    assert answer.response_metadata["codeforest"]["public_pass_rate"] == 1.0
    unreadable = chat.invoke({"messages": [HumanMessage("hello")]})["messages"][-1]
    assert "could not read a problem" in unreadable.content


def test_chat_graph_inside_a_supervisor_style_parent():
    parent = StateGraph(MessagesState)
    parent.add_node("coder", as_chat_graph("direct", model=RespondingChatModel(respond=Universal())))
    parent.add_edge(START, "coder")
    parent.add_edge("coder", END)
    out = parent.compile().invoke({"messages": [HumanMessage('def dec(x):\n    """Return x minus one."""')]})
    assert "return x - 1" in out["messages"][-1].content


def test_create_agent_calls_the_search_as_a_tool():
    from langchain.agents import create_agent

    problem = 'def inc(x):\n    """Return x plus one."""\n\nassert inc(5) == 6'
    agent_model = ScriptedChatModel.of(
        AIMessage("", tool_calls=[{"name": "codetree", "args": {"problem": problem}, "id": "call-1"}]),
        lambda messages: f"Here it is:\n{messages[-1].content}")
    tool = as_solver_tool("codetree", model=RespondingChatModel(respond=Universal()),
                          context={"structured_output": False, "codetree_max_programs": 3})
    agent = create_agent(agent_model, tools=[tool])
    out = agent.invoke({"messages": [HumanMessage("Write inc for me.")]})
    tool_message = out["messages"][2]
    assert tool_message.name == "codetree" and "return x + 1" in tool_message.content
    assert tool_message.artifact["stop_reason"] == "accepted"
    assert out["messages"][-1].content.startswith("Here it is:") and "return x + 1" in out["messages"][-1].content


def test_every_state_field_has_a_fresh_value():
    """A new run on a used thread resets every method-specific field (else a search could reuse old state)."""
    common = set(typing.get_type_hints(SearchState))
    for graph in GRAPHS:
        module = graph_module(graph)
        assert set(typing.get_type_hints(module.STATE)) - common == set(module.FRESH), graph
