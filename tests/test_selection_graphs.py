"""Selectors at the end of a real graph run, with scripted models (issue 21): resample collecting
``min_candidates`` public-passing programs, the Tester asked once, the chosen program and why."""

from __future__ import annotations

import json

import pytest

from codeforest.bench import Bench
from codeforest.graphs import resample
from codeforest.loading import load_dataset
from tests.fakes import RespondingChatModel, code_reply

PROBLEM = {"id": "T/double", "prompt": 'def f(x):\n    """Return twice x."""\n', "kind": "function",
           "entry_point": "f", "public_tests": ["assert f(2) == 4"]}
SQUARE, DOUBLE, SUM = "x * x", "x * 2", "x + x"  # all pass f(2) == 4; only the last two agree elsewhere


def script(bodies: list[str], tester: str = ""):
    prompts: list[str] = []

    def respond(messages):
        text = "\n".join(str(m.content) for m in messages)
        prompts.append(text)
        if "You write test inputs" in text:
            return tester
        return code_reply(f"def f(x):\n    return {bodies[len([p for p in prompts if 'test inputs' not in p]) - 1]}")

    return RespondingChatModel(respond=respond), prompts


def run(model, **settings):
    context = resample.ResampleContext(resample_n=5, **settings)
    return resample.build_graph(model=model).invoke({"problem": PROBLEM}, context=context)


def test_public_selector_is_the_papers_rule_and_asks_nothing_more():
    model, prompts = script([SQUARE, DOUBLE, SUM])
    out = run(model)
    assert out["final_code"].endswith(SQUARE) and out["selection"] is None and len(prompts) == 1


def test_agreement_over_min_candidates_picks_the_largest_behaviour_group():
    model, prompts = script([SQUARE, DOUBLE, SUM])
    out = run(model, selector="agreement", min_candidates=3, tester_inputs=0)
    assert len(prompts) == 3 and out["stop_reason"] == "passed_public_tests"  # three passing programs, then stop
    why = out["selection"]
    assert out["final_node"] == "n2" and out["final_code"].endswith(DOUBLE) and why["changed"]
    assert [g["nodes"] for g in why["groups"]] == [["n1"], ["n2", "n3"]] and why["tester_inputs"] == 0
    assert why["chosen_node"] == out["final_node"] == "n2"
    assert why["mutated_inputs"] == why["inputs"] == 4  # f(3), f(1), f(0), f(-2)
    assert out["public_pass_rate"] == 1.0 and out["cost"]["sandbox_runs"] == 3 + 3


def test_the_tester_is_asked_once_and_its_calls_are_validated():
    model, prompts = script([SQUARE, DOUBLE, SUM], tester="f(5)\n1. f(-1)\ng(2)\nf(5)")
    out = run(model, selector="agreement", min_candidates=3, tester_inputs=4, mutated_inputs=0)
    tester_prompts = [p for p in prompts if "You write test inputs" in p]
    assert len(tester_prompts) == 1 and "Write 4 different calls of `f`" in tester_prompts[0]
    assert out["selection"]["tester_inputs"] == 2 and out["selection"]["inputs"] == 2  # f(5), f(-1)
    assert out["final_node"] == "n2" and out["cost"]["llm_calls"] == 4


def test_codet_counts_the_testers_asserts_each_group_passes():
    model, _ = script([SQUARE, DOUBLE, SUM], tester="assert f(3) == 6\nassert f(1) == 2\nassert f(0) == 1")
    out = run(model, selector="codet", min_candidates=3, tester_inputs=3, mutated_inputs=0)
    assert [g["score"] for g in out["selection"]["groups"]] == [0, 4] and out["final_node"] == "n2"
    assert out["selection"]["probe_expected"] == ["6", "2", "1"]  # the asserts' expected values, with the inputs
    assert out["selection"]["probe_inputs"] == ["f(3)", "f(1)", "f(0)"]


def test_an_unreadable_tester_reply_is_counted_and_mutations_still_decide():
    model, _ = script([SQUARE, DOUBLE, SUM], tester="I cannot help with that.")
    out = run(model, selector="agreement", min_candidates=3, tester_inputs=3)
    assert out["cost"]["parse_failures"] == 1 and out["selection"]["tester_inputs"] == 0
    assert out["final_node"] == "n2"


def test_a_forced_choice_asks_and_runs_nothing():
    model, prompts = script(["x + 1", SQUARE])  # one program passes: nothing to choose between
    out = run(model, selector="agreement")
    why = out["selection"]
    assert len(prompts) == 2 and why["forced"] and not why["changed"] and out["final_node"] == "n2"
    assert why["probe_runs"] == 0 and out["cost"]["sandbox_runs"] == 2 and out["cost"]["llm_calls"] == 2


def test_a_spent_budget_skips_the_tester_and_the_mutations_still_decide():
    model, prompts = script([SQUARE, DOUBLE, SUM], tester="f(5)")
    out = run(model, selector="agreement", min_candidates=3, token_budget=45)  # 3 calls of 15 tokens
    why = out["selection"]
    assert len(prompts) == 3 and why["tester_inputs"] == 0 and why["token_budget"] and "model_error" not in why
    assert out["final_node"] == "n2" and why["changed"] and out["cost"]["llm_calls"] == 3


def test_without_public_tests_resample_draws_min_candidates_for_another_selector():
    bare = {**PROBLEM, "public_tests": []}
    for settings, drawn in (({}, 1), ({"selector": "agreement", "min_candidates": 3, "tester_inputs": 0}, 3)):
        model, prompts = script([SQUARE, DOUBLE, SUM])
        out = resample.build_graph(model=model).invoke({"problem": bare},
                                                       context=resample.ResampleContext(resample_n=5, **settings))
        assert len(prompts) == drawn and out["final_node"] == "n1"


@pytest.mark.parametrize("selector", ["agreement", "codet"])
def test_private_tests_never_reach_the_tester_or_the_state(selector, fixtures, tmp_path):
    tasks = load_dataset(str(fixtures / "functions.jsonl"))
    prompts: list[str] = []

    def respond(messages):
        prompts.append("\n".join(str(m.content) for m in messages))
        # distinct programs, so the selector has a choice to make and asks the Tester
        return "f(1)" if "You write test inputs" in prompts[-1] else code_reply(
            f"def nothing():\n    return {len(prompts)}")

    context = resample.ResampleContext(resample_n=2, selector=selector)
    Bench(["resample"], tasks, tmp_path, context=context, dataset="mini", model=RespondingChatModel(respond=respond)
          ).run()
    assert sum("You write test inputs" in p for p in prompts) == len(tasks)
    trees = "".join(p.read_text() for p in (tmp_path / "trees").rglob("*.json"))
    for task in tasks:
        for private in task.private_tests.tests:
            line = private.strip().splitlines()[-1].strip()
            assert all(line not in p for p in prompts) and line not in trees
    assert json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])["graph"] == "resample"


def test_the_command_line_chooses_the_selector(tmp_path, capsys):
    from codeforest.cli import main
    from codeforest.scripted_endpoint import ScriptedEndpoint

    bodies = iter([SQUARE, DOUBLE, SUM])
    problem = tmp_path / "double.jsonl"
    problem.write_text(json.dumps({"task_id": "T/double", "prompt": PROBLEM["prompt"], "entry_point": "f",
                                   "given_tests": PROBLEM["public_tests"],
                                   "test": "def check(f):\n    assert f(3) == 6\n"}) + "\n")
    def respond(body):
        if "You write test inputs" in json.dumps(body):
            return "f(5)"
        return code_reply(f"def f(x):\n    return {next(bodies)}")

    with ScriptedEndpoint([], respond=respond) as api:
        assert main(["solve", "--problem-file", str(problem), "--graph", "resample", "--selector", "agreement",
                     "--min-candidates", "3", "--base-url", api.url, "--model", "scripted", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["final_code"].endswith(DOUBLE) and out["private_passed"] is True
    assert out["selection"]["selector"] == "agreement" and out["selection"]["tester_inputs"] == 1
    assert "min_candidates 1" not in captured.err
    bodies = iter([SQUARE, DOUBLE, SUM])
    with ScriptedEndpoint([], respond=respond) as api:  # one candidate: the first sample passes the public test
        assert main(["solve", "--problem-file", str(problem), "--graph", "resample", "--selector", "agreement",
                     "--base-url", api.url, "--model", "scripted", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["final_code"].endswith(SQUARE)
    assert "selector agreement with min_candidates 1" in " ".join(captured.err.split())


@pytest.mark.parametrize(("graph", "wanted"), [("codetree", 2), ("bester", 3), ("rpm_mcts", 2)])
def test_min_candidates_keeps_a_search_going_past_its_first_passing_program(graph, wanted):
    from tests.test_native import INC, Universal
    from tests.test_native import run as run_graph

    bodies = ["x + 1", "1 + x", "x - (-1)", "(x + 2) - 1", "x + True", "sum([x, 1])", "x + 2 - 1", "-(-x - 1)"]

    def scripted():
        universal, written = Universal(), []

        def respond(messages):
            reply = universal.reply("\n".join(str(m.content) for m in messages))
            if reply.startswith("```python"):  # every program passes, each one different
                written.append(bodies[len(written) % len(bodies)])
                return f"```python\ndef inc(x):\n    return {written[-1]}\n```"
            return reply

        return RespondingChatModel(respond=respond), written

    model, written = scripted()
    first = run_graph(graph, INC, model=model)
    assert len(written) == 1 and first["final_code"].endswith(bodies[0])  # the paper's rule: stop at the first
    model, written = scripted()
    out = run_graph(graph, INC, model=model, min_candidates=wanted)
    passing = {n["code"] for n in out["nodes"].values() if n.get("code") and n["execution"]["passed"] == 2}
    assert len(written) == wanted == len(passing) and out["stop_reason"] in ("accepted", "solved")
    assert out["final_code"] == first["final_code"]  # the selector (public here) is what changes the choice
    # without public tests nothing can pass: the search stops at that many distinct (unverified) programs,
    # not at the end of its budget
    model, written = scripted()
    roomy = {"rpm_mcts": {"rpm_rollouts": 4}}.get(graph, {})  # a budget the search does not need
    bare = run_graph(graph, {**INC, "public_tests": []}, model=model, min_candidates=wanted, **roomy)
    assert len(written) == wanted and bare["stop_reason"] == "unverified" and bare["public_pass_rate"] is None


def test_differential_asks_the_judge_both_ways_and_counts_its_calls():
    prompts: list[str] = []
    bodies = iter([SQUARE, SQUARE + " + 0", DOUBLE])  # the wrong behaviour is the larger group here

    def respond(messages):
        text = "\n".join(str(m.content) for m in messages)
        prompts.append(text)
        if "gave different outputs" in text:
            first, second = (text.split(f"Output {x}:\n")[1].split("\n")[0] for x in "AB")
            right = 2 * int(text.split("Input:\nf(")[1].split(")")[0])
            return "Answer: A" if first == str(right) else "Answer: B" if second == str(right) else "Unsure."
        return code_reply(f"def f(x):\n    return {next(bodies)}")

    out = run(RespondingChatModel(respond=respond), selector="differential", min_candidates=3, tester_inputs=0)
    judged = [p for p in prompts if "gave different outputs" in p]
    why = out["selection"]
    assert out["final_code"].endswith(DOUBLE) and why["selector"] == "differential" and why["changed"]
    assert len(judged) == 2 and why["comparisons"][0]["verdict"] == "challenger" and why["abstention_rate"] == 0.0
    assert out["cost"]["llm_calls"] == 3 + 2


def test_the_harness_scores_the_methods_own_choice_and_reports_what_the_selector_fixed(tmp_path):
    from codeforest.report import markdown
    from codeforest.report_html import html_report

    data = tmp_path / "double.jsonl"
    data.write_text(json.dumps({"task_id": "T/double", "prompt": PROBLEM["prompt"], "entry_point": "f",
                                "given_tests": PROBLEM["public_tests"],
                                "test": "def check(f):\n    assert f(3) == 6\n"}) + "\n")
    model, _ = script([SQUARE, DOUBLE, SUM])  # resample's own rule keeps the square: public-passing, wrong
    out = tmp_path / "run"
    for selector in ("public", "agreement"):
        context = resample.ResampleContext(resample_n=5, selector=selector, min_candidates=3, tester_inputs=0)
        Bench(["resample"], load_dataset(str(data)), out, context=context, dataset="double",
              model=model if selector == "public" else script([SQUARE, DOUBLE, SUM])[0]).run()
    records = {r["settings"].get("selector", "public"): r for r in map(json.loads, (out / "results.jsonl").open())}
    assert records["public"]["private_passed"] is False and "selection" not in records["public"]
    chosen = records["agreement"]
    assert chosen["private_passed"] is True and chosen["selection"]["own_private_passed"] is False
    assert "own_code" not in chosen["selection"] and chosen["selection"]["own_node"] == "n1"
    table = markdown(list(records.values()))
    labels = "resample min_candidates=3 resample_n=5"
    assert f"| {labels} tester_inputs=0 | 1 | 1 (T/double) | - | - | - | - | - |" in table
    assert f"| {labels} selector=agreement tester_inputs=0 | 1 | 0 | 1 of 1 | 1 (T/double) | 0 | - | 0 |" in table
    page = html_report(out).read_text()
    assert "Selector <b>agreement</b>" in page and "changed the method's own choice n1" in page


def test_the_report_counts_selections_that_went_on_without_a_failed_model_call():
    from codeforest.report import selection_cells, selection_rows

    base = {"graph": "resample", "model": "m", "settings": {"selector": "agreement"}, "public_pass_rate": 1.0,
            "private_passed": True}
    records = [{**base, "problem_id": "A", "selection": {"changed": False, "model_error": "token budget spent"}},
               {**base, "problem_id": "B", "selection": {"changed": False}}]
    (row,) = selection_rows(records)
    assert row["faults"] == ["A"] and selection_cells(row)[-1] == "1 (A)"
    # the judge's abstentions are counted among the comparisons it was asked, not those it could not be
    judged = [{"verdict": "abstained"}, {"verdict": "leader"}, {"verdict": "not judged"}]
    records = [{**base, "problem_id": "A", "settings": {"selector": "differential"},
                "selection": {"changed": False, "comparisons": judged}}]
    (row,) = selection_rows(records)
    assert (row["abstained"], row["comparisons"]) == (1, 2) and selection_cells(row)[-2] == "1 of 2"


def test_the_html_groups_mark_the_chosen_program_where_it_was_grouped():
    """The method's own program, kept, was first written at n1 and again at n3 (its final node): groups list n1."""
    from codeforest.report_html import groups_html

    why = {"selector": "agreement", "groups": [{"nodes": ["n1"], "size": 1}, {"nodes": ["n2"], "size": 1}],
           "chosen_node": "n1", "changed": False}
    page = groups_html({"final_node": "n3", "selection": why})
    assert page.count("chosen") == 1 and "<td>1</td><td>1</td><td>n1</td><td>1</td><td>chosen</td>" in page


def test_a_final_program_whose_text_another_node_wrote_first_is_not_changed():
    """The method returned its program from n4, whose text n2 wrote first; agreement chooses that text (listed
    under n2): the final stays as it is."""
    # guards `changed` by code text, not node id: the same program on another node is no change
    from types import SimpleNamespace

    from codeforest.graphs.selection import select_final

    passed = {"total": 1, "passed": 1, "pass_rate": 1.0}
    codes = {"n1": SQUARE, "n2": DOUBLE, "n3": SUM, "n4": DOUBLE}
    nodes = {n: {"id": n, "order": i, "code": f"def f(x):\n    return {body}\n", "execution": passed}
             for i, (n, body) in enumerate(codes.items(), 1)}
    state = {"problem": PROBLEM, "nodes": nodes, "final_node": "n4", "final_code": nodes["n4"]["code"]}
    update = select_final(state, SimpleNamespace(context={"selector": "agreement", "tester_inputs": 0}))
    why = update["selection"]
    assert [g["nodes"] for g in why["groups"]] == [["n1"], ["n2", "n3"]] and why["programs"] == 3
    assert why["chosen_node"] == "n2" and why["own_node"] == "n4" and why["changed"] is False
    assert not {"final_node", "final_code", "public_pass_rate"} & set(update)  # the state keeps n4
    moved = select_final({**state, "final_node": "n1", "final_code": nodes["n1"]["code"]},
                         SimpleNamespace(context={"selector": "agreement", "tester_inputs": 0}))
    assert moved["selection"]["changed"] is True and moved["final_node"] == "n2"  # another text: a change


def test_the_selection_table_leaves_out_errors_and_counts_only_real_fixes_and_public_passing_finals():
    # guards selection_rows: errored records skipped; `fixed` needs the own program wrong; public_but_wrong
    # needs every public test passed
    from codeforest.report import selection_rows

    base = {"graph": "resample", "model": "m", "settings": {"selector": "agreement"}}
    records = [
        {**base, "problem_id": "A", "public_pass_rate": 1.0, "private_passed": True,
         "selection": {"changed": True, "own_private_passed": False}},  # fixed
        {**base, "problem_id": "B", "public_pass_rate": 1.0, "private_passed": True,
         "selection": {"changed": True, "own_private_passed": True}},  # right before and after: not fixed
        {**base, "problem_id": "C", "public_pass_rate": 0.5, "private_passed": False,
         "selection": {"changed": False}},  # fails a public test: not public-passing but wrong
        {**base, "problem_id": "D", "public_pass_rate": 1.0, "private_passed": False,
         "selection": {"changed": True, "own_private_passed": True}},  # broke, and public-passing but wrong
        {**base, "problem_id": "E", "public_pass_rate": None, "private_passed": False},  # no public test
        {**base, "problem_id": "F", "error": "model fault", "public_pass_rate": 1.0, "private_passed": False},
    ]
    (row,) = selection_rows(records)
    assert row["problems"] == 5 and row["selected"] == 4 and row["changed"] == 3  # F, errored, is left out
    assert row["fixed"] == ["A"] and row["broke"] == ["D"] and row["public_but_wrong"] == ["D"]
    assert selection_rows(records[-1:]) == []  # a run with nothing but errors has no row


def test_the_tester_and_the_judge_can_have_an_endpoint_of_their_own():
    """The search runs on its model; the Tester and the judge on another (a stronger one, where the judge pays)."""
    from codeforest.scripted_endpoint import ScriptedEndpoint

    def respond(body):
        text = json.dumps(body)
        if "You write test inputs" in text:
            return "f(5)"
        return "Answer: B" if "gave different outputs" in text else "no answer"

    model, prompts = script([SQUARE, SQUARE + " + 0", DOUBLE])
    with ScriptedEndpoint([], respond=respond) as api:
        out = run(model, selector="differential", min_candidates=3, tester_inputs=2, mutated_inputs=0,
                  selector_model="judge-7b", selector_base_url=api.url)
        asked = [json.dumps(body) for body in api.requests]
    assert len(prompts) == 3 and all("You write test inputs" not in p for p in prompts)  # the search's calls only
    assert len(asked) == 3 and "You write test inputs" in asked[0] and all('"judge-7b"' in a for a in asked)
    why = out["selection"]
    assert why["tester_model"] == why["judge_model"] == "judge-7b" and why["tester_inputs"] == 1
    assert why["comparisons"][0]["verdict"] == "abstained"  # "B" in both orders: the position, not the output
    assert out["cost"]["llm_calls"] == 3 + 3


def test_a_roles_entry_gives_the_judge_a_model_of_its_own_beside_the_selector_model_and_both_are_recorded():
    from codeforest.scripted_endpoint import ScriptedEndpoint

    def respond(body):
        return "f(5)" if "You write test inputs" in json.dumps(body) else "Answer: B"

    model, _ = script([SQUARE, SQUARE + " + 0", DOUBLE])
    with ScriptedEndpoint([], respond=respond) as api:
        out = run(model, selector="differential", min_candidates=3, tester_inputs=2, mutated_inputs=0,
                  selector_model="judge-7b", selector_base_url=api.url,
                  roles={"judge": {"model": "judge-70b", "base_url": api.url}})
        models = [body["model"] for body in api.requests]
    assert models == ["judge-7b", "judge-70b", "judge-70b"]  # the Tester's call, then the judge's two orders
    assert (out["selection"]["tester_model"], out["selection"]["judge_model"]) == ("judge-7b", "judge-70b")


def test_a_selector_stopped_by_the_cost_budget_says_which_budget():
    model, prompts = script([SQUARE, DOUBLE, SUM], tester="f(5)")
    out = run(model, selector="agreement", min_candidates=3, cost_budget=45e-6,  # 3 calls of 15 tokens, 1 a million
              prices={"RespondingChatModel": (1.0, 1.0)})
    why = out["selection"]
    assert len(prompts) == 3 and why["tester_inputs"] == 0 and why["cost_budget"] and "token_budget" not in why


def test_a_selector_endpoint_needs_its_model_name_and_only_the_name_is_recorded():
    from codeforest.bench import result_settings

    with pytest.raises(ValueError, match="selector_model"):
        resample.ResampleContext(selector_base_url="http://127.0.0.1:1/v1")
    context = resample.ResampleContext(selector="differential", selector_model="judge-7b",
                                       selector_base_url="http://user:secret@127.0.0.1:1/v1")
    assert result_settings(context) == {"selector": "differential", "selector_model": "judge-7b"}
