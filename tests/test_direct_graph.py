"""The direct graph driven by a scripted chat model: every path, the common output, the cost."""

from __future__ import annotations

import json

from codeforest.api import solve
from codeforest.context import Context
from codeforest.graphs.direct import build_graph
from tests.fakes import ScriptedChatModel, code_reply

PROBLEM = {"id": "T/1", "prompt": "from typing import List\n\ndef total(xs: List[int]) -> int:\n    \"\"\"Sum.\"\"\"\n",
           "kind": "function", "entry_point": "total",
           "public_tests": ["assert total([1, 2]) == 3", "assert total([]) == 0"]}
STDIO = {"id": "S/1", "prompt": "Read two ints, print their sum.", "kind": "stdio", "entry_point": None,
         "public_tests": [{"input": "1 2\n", "output": "3\n"}]}


def test_passing_program_stops_on_public_pass_with_common_output():
    model = ScriptedChatModel.of(code_reply("def total(xs: List[int]) -> int:\n    return sum(xs)"))
    out = build_graph(model=model).invoke({"problem": PROBLEM})
    assert out["stop_reason"] == "passed_public_tests" and out["final_node"] == "n1"
    assert out["public_pass_rate"] == 1.0
    assert out["final_code"].startswith("from typing import List")  # the prompt's import was added
    assert out["nodes"]["n1"]["execution"]["passed"] == 2 and out["nodes"]["n1"]["status"] == "passed"
    assert out["cost"] == {"llm_calls": 1, "prompt_tokens": 10, "completion_tokens": 5, "programs": 1,
                           "sandbox_runs": 1, "parse_failures": 0, "cached_calls": 0, "prm_calls": 0,
                           "models": {"ScriptedChatModel": {"llm_calls": 1, "prompt_tokens": 10,
                                                            "completion_tokens": 5}}}
    json.dumps(out)  # the whole output is plain data
    system, user = model.calls[0]
    assert "function signature" in system.content and user.content == PROBLEM["prompt"]


def test_failing_program_is_still_returned_with_feedback():
    model = ScriptedChatModel.of(code_reply("def total(xs):\n    return 0"))
    out = build_graph(model=model).invoke({"problem": PROBLEM})
    assert out["stop_reason"] == "budget_exhausted" and out["public_pass_rate"] == 0.5
    assert "assert total([1, 2]) == 3 # program output: 0" in out["nodes"]["n1"]["feedback"]


def test_unparseable_reply_counts_as_a_parse_failure():
    model = ScriptedChatModel.of("I cannot write this code, sorry.")
    out = build_graph(model=model).invoke({"problem": PROBLEM})
    assert out["cost"]["parse_failures"] == 1 and out["public_pass_rate"] == 0.0


def test_body_only_answer_is_completed_with_the_signature():
    model = ScriptedChatModel.of("```python\n    return sum(xs)\n```")
    out = build_graph(model=model).invoke({"problem": PROBLEM})
    assert out["public_pass_rate"] == 1.0


def test_stdio_problem_uses_the_stdio_prompt():
    model = ScriptedChatModel.of(code_reply("a, b = map(int, input().split())\nprint(a + b)"))
    out = build_graph(model=model).invoke({"problem": STDIO})
    assert out["public_pass_rate"] == 1.0
    assert "standard input" in model.calls[0][0].content


def test_context_prompts_dir_reaches_the_agent(tmp_path):
    (tmp_path / "solver.yaml").write_text(
        "inputs: [problem]\ntemplates:\n  system:\n    function: CUSTOM SYSTEM\n    stdio: CUSTOM STDIO\n"
        "  user: 'Task: {problem}'\n")
    model = ScriptedChatModel.of(code_reply("def total(xs):\n    return sum(xs)"))
    build_graph(model=model).invoke({"problem": PROBLEM}, context=Context(prompts_dir=str(tmp_path)))
    assert model.calls[0][0].content == "CUSTOM SYSTEM" and model.calls[0][1].content.startswith("Task: ")


def test_solve_streams_progress_events_and_measures_wall_time():
    events = []
    model = ScriptedChatModel.of(code_reply("def total(xs):\n    return sum(xs)"))
    out = solve(PROBLEM, "direct", model=model, on_event=events.append)
    kinds = [e["event"] for e in events]
    assert kinds == ["solving", "node_created", "executed", "finished"]
    assert events[2] == {"event": "executed", "node": "n1", "passed": 2, "total": 2}
    assert out["cost"]["wall_s"] > 0 and out["cost"]["llm_calls"] == 1
