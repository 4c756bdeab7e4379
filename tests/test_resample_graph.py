"""The resampling baseline: seeded samples, the first public pass, else the most tests passed."""

from __future__ import annotations

from codeforest.graphs.resample import ResampleContext, build_graph, sample_seed
from tests.fakes import RespondingChatModel

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}


def by_seed(bodies: dict[int, str], calls: list):
    def respond(messages, **kwargs):
        calls.append((kwargs.get("temperature"), kwargs.get("seed")))
        return f"```python\ndef inc(x):\n    return {bodies[kwargs['seed']]}\n```"

    return RespondingChatModel(respond=respond, pass_kwargs=True)


def run(model, problem=PROBLEM, **settings):
    return build_graph(model=model).invoke({"problem": problem}, context=ResampleContext(**settings))


def test_stops_at_the_first_program_passing_the_public_tests():
    calls = []
    out = run(by_seed({1: "x", 2: "2", 3: "x + 1", 4: "x + 1"}, calls), resample_n=4)
    assert calls == [(1.0, 1), (1.0, 2), (1.0, 3)]  # a seed per sample; the 4th is never drawn
    assert out["final_node"] == "n3" and out["stop_reason"] == "passed_public_tests"
    assert out["cost"]["programs"] == 3 and out["nodes"]["n3"]["seed"] == 3


def test_without_a_pass_the_most_tests_passed_wins_ties_to_the_earliest():
    calls = []
    # seed 7 run: samples get seeds 700001.. ; "2" passes inc(1) == 2 only, "6" passes inc(5) == 6 only
    bodies = {sample_seed(ResampleContext(resample_seed=7), i): b for i, b in enumerate(["0", "2", "6"])}
    out = run(by_seed(bodies, calls), resample_n=3, resample_seed=7, resample_temperature=0.5)
    assert [c[1] for c in calls] == [700001, 700002, 700003] and calls[0][0] == 0.5
    assert out["final_node"] == "n2" and out["stop_reason"] == "budget_exhausted"
    assert out["public_pass_rate"] == 0.5


def test_a_problem_without_public_tests_keeps_its_first_sample():
    calls = []
    out = run(by_seed({1: "x + 1"}, calls), problem={**PROBLEM, "public_tests": []}, resample_n=5)
    assert len(calls) == 1 and out["stop_reason"] == "unverified" and out["final_node"] == "n1"


def test_one_sample_runs_within_the_recursion_limit_solve_gives_it():
    """solve() sets the recursion limit the budget needs: one sample still gets the least any search needs."""
    from codeforest.api import solve

    out = solve(PROBLEM, "resample", context={"resample_n": 1}, model=by_seed({1: "x + 1"}, []))
    assert out["stop_reason"] == "passed_public_tests" and out["cost"]["programs"] == 1


def test_a_program_written_again_in_a_run_is_not_run_again_but_a_new_run_runs_it(monkeypatch):
    """The released CodePRM and RethinkMCTS keep a program's verdict for the problem; every graph does, per run."""
    from codeforest.graphs import kit

    ran = []

    def counting(problem, code, **kwargs):
        ran.append(code)
        return real(problem, code, **kwargs)

    real = kit.run_public_tests
    monkeypatch.setattr(kit, "run_public_tests", counting)
    same = {1: "x", 2: "x", 3: "x"}
    first = run(by_seed(same, []), resample_n=3)
    assert len(ran) == 1 and first["cost"]["programs"] == 3
    assert [first["nodes"][n]["execution"]["passed"] for n in ("n1", "n2", "n3")] == [0, 0, 0]
    second = run(by_seed(same, []), resample_n=3)  # the same problem, another run: its own verdicts
    assert len(ran) == 2 and second["public_pass_rate"] == 0.0
    run(by_seed({1: "x", 2: "x + 1", 3: "x"}, []), resample_n=3)  # another program is run
    assert len(ran) == 4
