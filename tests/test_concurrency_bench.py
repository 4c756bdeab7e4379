"""Where a run's time goes, and the concurrency benchmark's accounting (its speed is measured by the command,
``codeforest bench-concurrency``, never asserted here)."""

from __future__ import annotations

import contextvars
import json
import threading
import types

import pytest

from codeforest.bench import Bench, read_results
from codeforest.cli import main
from codeforest.concurrency_bench import bench_concurrency, outside_share
from codeforest.context import Context
from codeforest.graphs.rethink_mcts import RethinkContext
from codeforest.loading import load_dataset
from codeforest.scripted_endpoint import ScriptedEndpoint, any_role_reply, schema_instance
from codeforest.tools import stopwatch
from tests.fakes import InFlight


def test_union_length_counts_overlaps_once():
    assert stopwatch.union_length([]) == 0
    assert stopwatch.union_length([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]) == 4
    assert stopwatch.union_length([(4, 5), (0, 1)]) == 2


def test_parallel_calls_sum_while_busy_time_is_their_union(monkeypatch):
    """Three model calls in threads over the same 2 s of a fake clock, then a 1 s sandbox run: 6 s of model
    time, 1 of sandbox, 3 busy."""
    now = [0.0]
    monkeypatch.setattr(stopwatch, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    inside, leave = threading.Barrier(4, timeout=30), threading.Event()

    def call():
        with stopwatch.timed(stopwatch.MODEL):
            inside.wait()  # all three calls have started (at 0)
            assert leave.wait(timeout=30)  # ... and end at 2

    with stopwatch.timing() as tally:
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(call,)) for _ in range(3)]
        for t in threads:
            t.start()
        inside.wait()
        now[0] = 2.0
        leave.set()
        for t in threads:
            t.join(timeout=30)
        now[0] = 5.0
        with stopwatch.timed(stopwatch.SANDBOX):
            now[0] = 6.0
        assert stopwatch.model_calls(tally) == 3  # live, while the block runs; sandbox runs are no model calls
    assert tally == {stopwatch.MODEL: 6.0, stopwatch.SANDBOX: 1.0, stopwatch.BUSY: 3.0}
    with stopwatch.timed(stopwatch.MODEL):  # no tally open: nothing to add to, nothing raised
        pass


def test_a_failed_model_call_takes_time_but_is_no_call_answered():
    with stopwatch.timing() as tally:
        with pytest.raises(ConnectionError), stopwatch.timed(stopwatch.MODEL):
            raise ConnectionError("endpoint down")
        with stopwatch.timed(stopwatch.MODEL):
            pass
        assert stopwatch.model_calls(tally) == 1 and len(tally["_spans"]) == 2


def test_a_bench_record_says_where_its_time_went(fixtures, tmp_path):
    """Model seconds come from the graph's node threads (the tally travels with the context)."""
    tasks = load_dataset(str(fixtures / "functions.jsonl"))[:2]
    with ScriptedEndpoint([], delay=0.3, respond=any_role_reply) as endpoint:
        context = Context(model="scripted", base_url=endpoint.url)
        Bench(["direct"], tasks, tmp_path, context=context, dataset="mini").run()
    records = read_results(tmp_path)
    assert len(records) == 2
    for record in records:
        assert record["llm_calls"] == 1 and 0.3 <= record["model_s"] < record["wall_s"]
        assert record["sandbox_s"] > 0  # the public tests and the private scoring
        assert record["outside_s"] == round(record["outside_s"], 3) >= 0
        assert record["model_s"] + record["sandbox_s"] + record["outside_s"] <= record["wall_s"] + 0.01


def test_schema_instances_fill_what_the_roles_ask_for():
    thoughts = {"type": "object", "required": ["thoughts"], "properties": {"thoughts": {
        "type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "object", "required": ["thought", "p"],
                                                                 "properties": {"thought": {"type": "string"},
                                                                                "p": {"type": "number"}}}}}}
    assert schema_instance(thoughts) == {"thoughts": [{"thought": "x", "p": 0.5}] * 3}
    assert schema_instance({"type": "integer", "minimum": 0, "maximum": 5}) == 2
    assert schema_instance({"type": "number", "minimum": -1, "maximum": 1}) == 0
    reply = any_role_reply({"messages": [{"content": "def inc(x):\n    pass"}]})
    assert "def inc(*args, **kwargs):\n    return None" in reply and "1. " in reply
    assert "print(input())" in any_role_reply({"messages": [{"content": "Read n from stdin."}]})


def test_rows_for_each_concurrency_and_inside_one_search(fixtures, tmp_path):
    tasks = load_dataset(str(fixtures / "functions.jsonl"))[:2]
    rows = bench_concurrency(["direct", "rethink_mcts"], tasks, tmp_path,
                             context=RethinkContext(rethink_rollouts=2, rethink_width=2), dataset="mini",
                             concurrencies=[1, 2], delay=0.05, inside=[1, 2])
    shape = [(r["graph"], r["mode"], r["n"], r["problems"]) for r in rows]
    assert shape == [("direct", "problems", 1, 2), ("direct", "problems", 2, 2), ("rethink_mcts", "problems", 1, 2),
                     ("rethink_mcts", "problems", 2, 2), ("rethink_mcts", "inside (rethink_concurrency)", 2, 1)]
    assert rows[0]["calls"] == rows[1]["calls"] == 2  # one call per problem, however many at once
    assert rows[2]["calls"] == rows[3]["calls"] == 2 * rows[4]["calls"]  # the same searches, concurrent or not
    assert all(0 <= r["outside_share"] < 1 for r in rows)
    for one, two in ((rows[0], rows[1]), (rows[2], rows[3])):  # both compare with the 2nd finish of one serial run
        assert one["serial_s"] == one["wall_s"] == two["serial_s"] and one["speedup"] == one["efficiency"] == 1.0
        assert two["efficiency"] == pytest.approx(two["speedup"] / 2, abs=0.01)
    assert json.loads((tmp_path / "concurrency.json").read_text()) == rows


def test_outside_share_weighs_runs_by_their_time():
    assert outside_share([{"wall_s": 10, "outside_s": 1}, {"wall_s": 30, "outside_s": 1}]) == 0.05
    assert outside_share([]) == 0


def test_the_command_prints_and_writes_the_table(fixtures, tmp_path, capsys):
    code = main(["bench-concurrency", "--graph", "direct", "--dataset", str(fixtures / "functions.jsonl"),
                 "--concurrency", "1,2", "--delay", "0.05", "--out", str(tmp_path)])
    assert code == 0
    table = (tmp_path / "concurrency.md").read_text()
    assert table in capsys.readouterr().out and "| direct | problems | 2 | 2 | 0.05 | 2 |" in table
    assert main(["bench-concurrency", "--dataset", str(fixtures / "functions.jsonl"), "--concurrency", "8",
                 "--out", str(tmp_path)]) == 2  # three problems cannot fill eight places


def gather_in_flight(endpoint: ScriptedEndpoint, gather: range) -> InFlight:
    """Count the requests ``endpoint`` is answering at once, gathering those numbered in ``gather`` (``InFlight``)."""
    flight = InFlight(gather)

    class Counted(endpoint.server.RequestHandlerClass):
        def do_POST(self):  # noqa: N802 - http.server's naming
            with flight.call():
                super().do_POST()

    endpoint.server.RequestHandlerClass = Counted
    return flight


def test_a_graphs_own_concurrency_is_the_number_of_calls_in_flight():
    """bester_concurrency=3 sends 3 reflections at once (LangGraph's max_concurrency counts one task more)."""
    from codeforest.api import solve
    from codeforest.graphs.bester import BesterContext

    problem = {"id": "T/f", "prompt": "def f(x):\n    pass\n", "kind": "function", "entry_point": "f",
               "public_tests": ["assert f(1) == 2"]}
    with ScriptedEndpoint([], respond=any_role_reply) as endpoint:
        flight = gather_in_flight(endpoint, range(2, 5))  # after the initial program: the round's three reflections
        solve(problem, "bester", context=BesterContext(model="scripted", base_url=endpoint.url, bester_width=3,
                                                       bester_depth=1, bester_concurrency=3))
    assert len(endpoint.requests) == 7 and flight.peak == 3  # answered together, not one or two at a time
