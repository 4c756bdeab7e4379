"""HumanEval+ and MBPP+ (EvalPlus releases) as codeforest tasks, scored as EvalPlus scores them.

Written here rather than taken from the ``evalplus`` package: that package pulls in model clients, tree-sitter
and more for its data code, and computes expected outputs by running the reference solutions inside its own
process; here they run in the sandbox, once per problem, and are kept beside the dataset file
(``<file>.expected.jsonl``, keyed by the file's sha256).

Public tests are what EvalPlus and the papers show: HumanEval's docstring examples, MBPP's one prompt assert.
The private tests are two suites: ``private_tests`` the base inputs (the original benchmark's verdict) and
``plus_tests`` base + plus inputs (EvalPlus's "plus" verdict needs both). Each input is one test with EvalPlus's
time limit, ``max(1 s, 4 x the reference's time)`` (evalplus 0.3.1's defaults), and its comparison: exact, else
within ``atol`` (1e-6 once an expected output is a float) by ``np.allclose``'s rule with rtol 1e-7, plus its
special oracles (HumanEval/32's root check, eight MBPP set-equal tasks, ...).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from codeforest.datasets import DatasetInfo, data_cache
from codeforest.problems import DatasetError, Problem, Task, docstring_tests
from codeforest.suites import TestSuite
from codeforest.tools._runner import from_plain, to_plain
from codeforest.tools.sandbox import run
from codeforest.tools.testing import calls_suite

GT_TIME_FACTOR = 4.0  # evalplus DEFAULT_GT_TIME_LIMIT_FACTOR
MIN_TIME_LIMIT = 1.0  # evalplus 0.3.1 DEFAULT_MIN_TIME_LIMIT (its main branch has since raised it to 4 s)
EXPECTED_FORMAT = 1  # of the kept expected outputs: a line of another format is computed again
REFERENCE_TIMEOUT_S = 60.0  # per input when computing expected outputs (EvalPlus sets none)
MBPP_OUTPUT_NOT_NONE = ("check_str", "text_match_three", "text_starta_endb")
MBPP_OUTPUT_SET_EQ = ("similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly", "larg_nnum",
                      "intersection_array", "find_dissimilar", "Diff")

CHECK_SLACK_S = 10.0  # a test's limit beyond its call's: decoding its data and comparing (trusted code)

# Runs in the sandbox's trusted test process (``TestSuite.support``), never beside the program: EvalPlus's comparison
# of one output, the program's function a handle whose calls cross to the program's process as plain data. The
# inputs and expected outputs are data (``_EP_ARGS``, ``_EP_EXP``: plain-data JSON, appended to this source with
# the oracles' task lists), never code to compile, and only the call itself runs under EvalPlus's time limit.
CHECK_SOURCE = '''
def _evalplus_check(fn, i, atol, dataset, entry, limit):
    import json
    import math

    from __main__ import call_within, from_plain  # the sandbox's trusted runner, which runs as a script
    args, exp = from_plain(json.loads(_EP_ARGS[i])), from_plain(json.loads(_EP_EXP[i]))
    out = call_within(limit, fn, *args)
    exact = out == exp
    if dataset == "mbpp":
        if entry == "are_equivalent":
            exact = True
        elif entry == "sum_div":
            exact = exact or out == 0
        elif entry == "surface_Area":
            base, height = args
            slant = math.sqrt((base / 2) ** 2 + height ** 2)
            exact = exact or abs(out - round(base ** 2 + 4 * (base * slant) / 2)) <= atol
        elif entry == "digit_distance_nums":
            s1, s2 = str(args[0]), str(args[1])
            n = max(len(s1), len(s2))
            exact = exact or out == sum(abs(int(a) - int(b)) for a, b in zip(s1.zfill(n), s2.zfill(n)))
        elif entry in _EP_SET_EQ:
            exact = set(out) == set(exp)
        elif entry in _EP_NOT_NONE:
            exact = out == exp if isinstance(out, bool) else exp == (out is not None)
    if dataset == "humaneval" and entry == "find_zero":
        assert abs(sum(c * math.pow(out, i) for i, c in enumerate(args[0]))) <= atol, "not a root"
        return
    if not exact and atol != 0:
        assert type(out) == type(exp), f"returned a {type(out).__name__}, expected a {type(exp).__name__}"
        if isinstance(exp, (list, tuple)):
            assert len(out) == len(exp), "wrong length"
        assert _evalplus_close(out, exp, atol), "not within tolerance"
    else:
        assert exact, "wrong answer"


def _evalplus_close(a, b, atol):
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(_evalplus_close(x, y, atol) for x, y in zip(a, b)))
    if isinstance(a, str) or isinstance(b, str):
        raise TypeError("strings compared within a tolerance")
    return a == b or abs(a - b) <= atol + 1e-07 * abs(b)
'''


def read_rows(path: Path) -> list[dict]:
    """The rows of an EvalPlus release file (gzipped JSONL, or plain JSONL)."""
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    for row in rows:
        missing = {"task_id", "prompt", "entry_point", "canonical_solution", "base_input", "plus_input",
                   "atol"} - set(row)
        if missing:
            raise DatasetError(f"{path}: {row.get('task_id', '?')} lacks {', '.join(sorted(missing))}")
    return rows


def is_floats(x) -> bool:
    """EvalPlus's ``is_floats``: a float, or a non-empty list or tuple of floats."""
    if isinstance(x, float):
        return True
    return isinstance(x, (list, tuple)) and bool(x) and all(isinstance(i, float) for i in x)


def mbpp_inputs(task_id: str, inputs) -> list:
    """MBPP+ inputs as EvalPlus turns them into the types the functions take (its ``mbpp_deserialize_inputs``);
    a dict (Mbpp/793's plus inputs) iterates as no input at all."""
    if not isinstance(inputs, list):
        return []
    tid = int(task_id.split("/")[-1])

    def tuples(lst):
        return [tuple(x) for x in lst]

    if tid in (2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579, 596, 616, 630, 726, 740,
               744, 809):
        return [tuples(inp) for inp in inputs]
    if tid in (63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780):
        return [[tuples(lst_lst) for lst_lst in inp] for inp in inputs]
    if tid in (75, 413, 444, 753):
        return [[tuples(inp[0])] + [inp[1]] for inp in inputs]
    if tid in (106, 750):
        return [[inp[0]] + [tuple(inp[1])] for inp in inputs]
    if tid == 115:
        return [[[set(item) if isinstance(item, list) and len(item) else {} for item in inp[0]]] for inp in inputs]
    if tid == 124:
        return [(float(inp[0]), complex(inp[1])) for inp in inputs]
    if tid in (250, 405, 446, 617, 720, 763, 808):
        return [[tuple(inp[0])] + [inp[1]] for inp in inputs]
    if tid in (259, 401, 445):
        return [tuples([tuples(lst_lst) for lst_lst in inp]) for inp in inputs]
    if tid == 278:
        return [tuples([[tuple(item) if isinstance(item, list) else item for item in inp[0]]]) for inp in inputs]
    if tid == 307:
        return [[tuple(inp[0])] + [inp[1], inp[2]] for inp in inputs]
    if tid == 722:
        return [[{key: tuple(value) for key, value in inp[0].items()}] + inp[1:] for inp in inputs]
    if tid == 252:
        return [[complex(inp[0])] for inp in inputs]
    if tid in (580, 615, 791):
        return [_all_tuples(inp) for inp in inputs]
    return inputs


def _all_tuples(value):
    return tuple(_all_tuples(v) for v in value) if isinstance(value, list) else value


def reference_program(row: dict, dataset: str) -> str:
    """The reference solution as EvalPlus runs it: HumanEval's prompt + solution, MBPP's solution; where EvalPlus
    keeps only whether the reference returned something (three MBPP tasks returning ``re.Match``), that is what
    it returns."""
    if dataset == "humaneval":
        return row["prompt"] + row["canonical_solution"]
    entry = row["entry_point"]
    if entry in MBPP_OUTPUT_NOT_NONE:
        return (f"{row['canonical_solution']}\n\n_reference = {entry}\n\n\ndef {entry}(*args):\n"
                "    return _reference(*args) is not None\n")
    return row["canonical_solution"]


def inputs_of(row: dict, dataset: str) -> tuple[list, list]:
    """A row's base and plus inputs, as the function takes them."""
    if dataset == "mbpp":
        return mbpp_inputs(row["task_id"], row["base_input"]), mbpp_inputs(row["task_id"], row["plus_input"])
    return row["base_input"], row["plus_input"] if isinstance(row["plus_input"], list) else []


def compute_expected(row: dict, dataset: str, *, backend: str | None = None) -> dict:
    """Run the reference solution on every input in the sandbox: the values it returns (as plain-data JSON),
    whether each is a float or floats (EvalPlus's ``is_floats``) and its time per input. An input the reference
    itself fails on is recorded as such and left out of the tests."""
    entry = row["entry_point"]
    found = {"task_id": row["task_id"]}
    for part, inputs in zip(("base", "plus"), inputs_of(row, dataset), strict=True):
        result = run(reference_program(row, dataset), calls_suite(inputs, entry), timeout=REFERENCE_TIMEOUT_S,
                     backend=backend)
        if result.error:
            raise DatasetError(f"{row['task_id']}: the reference solution does not run ({result.error})")
        values, floats, seconds = [], [], []
        for outcome in result.outcomes:
            if outcome.passed:  # ``actual``: the value as plain-data JSON
                values.append(outcome.actual)
                floats.append(is_floats(from_plain(json.loads(outcome.actual))))
                seconds.append(outcome.seconds or 0.0)
            else:  # the reference failed here: no test
                values.append(None)
                floats.append(False)
                seconds.append(None)
        found[f"{part}_float"] = floats
        found[part], found[f"{part}_s"] = values, seconds
    return found


def expected_outputs(rows: list[dict], dataset: str, path: Path, *, backend: str | None = None) -> dict[str, dict]:
    """Every row's expected outputs, computed once in the sandbox and kept in ``<file>.expected.jsonl`` (lines
    appended as each problem finishes, so an interrupted computation resumes)."""
    source = hashlib.sha256(path.read_bytes()).hexdigest()
    store = path.with_name(path.name + ".expected.jsonl")
    if not os.access(path.parent, os.W_OK):  # a data folder the user may not write: the cache keeps them
        store = data_cache() / store.name
        store.parent.mkdir(parents=True, exist_ok=True)
    known: dict[str, dict] = {}
    if store.is_file():
        for line in store.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if isinstance(record, dict) and record.get("source_sha256") == source \
                    and record.get("format") == EXPECTED_FORMAT:
                known[record["task_id"]] = record
    todo = [row for row in rows if row["task_id"] not in known]
    if todo:
        from rich.console import Console
        from rich.progress import track

        with ThreadPoolExecutor(max_workers=2) as pool, open(store, "a", encoding="utf-8") as out:
            jobs = pool.map(lambda row: compute_expected(row, dataset, backend=backend), todo)
            for record in track(jobs, total=len(todo), console=Console(stderr=True), transient=True,
                                description=f"expected outputs of {path.name} (reference solutions, in the sandbox)"):
                record.update(source_sha256=source, format=EXPECTED_FORMAT)
                out.write(json.dumps(record) + "\n")
                out.flush()
                known[record["task_id"]] = record
    return known


def suite(row: dict, dataset: str, parts: list[tuple[list, dict, str]]) -> TestSuite | None:
    """One test per input the reference answered, of every ``(inputs, expected, part)``: the call checked by
    EvalPlus's rule, under its time limit; the inputs and outputs travel as data beside the check."""
    entry, args_data, expected_data, tests, limits = row["entry_point"], [], [], [], []
    for inputs, expected, part in parts:
        atol = row["atol"]  # EvalPlus runs base and plus in processes of their own: each starts from the row's
        for args, exp, floats, took in zip(inputs, expected[part], expected[f"{part}_float"], expected[f"{part}_s"],
                                           strict=True):
            if took is None:
                continue
            if atol == 0 and floats:
                atol = 1e-6  # as EvalPlus: once an expected output is a float, for the rest of the suite
            limit = max(MIN_TIME_LIMIT, GT_TIME_FACTOR * took)
            tests.append(f"_evalplus_check({entry}, {len(tests)}, {atol!r}, {dataset!r}, {entry!r}, {limit!r})")
            limits.append(limit + CHECK_SLACK_S)
            args_data.append(json.dumps(to_plain(list(args))))
            expected_data.append(exp)
    if not tests:
        return None
    support = (f"{CHECK_SOURCE}\n_EP_SET_EQ = {MBPP_OUTPUT_SET_EQ!r}\n_EP_NOT_NONE = {MBPP_OUTPUT_NOT_NONE!r}\n"
               f"_EP_ARGS = {args_data!r}\n_EP_EXP = {expected_data!r}\n")
    return TestSuite.function(tests, entry, timeouts=tuple(limits), support=support)


def to_task(row: dict, dataset: str, expected: dict, source: str) -> Task:
    """A task: the public tests as the papers show them, base and base + plus as the two private suites."""
    entry = row["entry_point"]
    if dataset == "humaneval":
        public = docstring_tests(row["prompt"], entry)
    else:
        public = [line.strip() for line in row["prompt"].splitlines() if re.match(r"\s*assert\b", line)][:1]
    problem = Problem(id=row["task_id"], prompt=row["prompt"], kind="function", entry_point=entry,
                      public_tests=public)
    base_inputs, plus_inputs = inputs_of(row, dataset)
    base = (base_inputs, expected, "base")
    return Task(problem=problem, private_tests=suite(row, dataset, [base]), source=source,
                plus_tests=suite(row, dataset, [base, (plus_inputs, expected, "plus")]))


def load_evalplus(info: DatasetInfo, path: Path, *, backend: str | None = None) -> list[Task]:
    """HumanEval+ or MBPP+ from its release file, expected outputs computed (once) in the sandbox."""
    dataset = "humaneval" if info.format == "humaneval_plus" else "mbpp"
    rows = read_rows(path)
    expected = expected_outputs(rows, dataset, path, backend=backend)
    return [to_task(row, dataset, expected[row["task_id"]], f"{info.name} ({path.name})") for row in rows]


PLUS_OF = {"humaneval": "humaneval_plus", "humaneval164": "humaneval_plus", "mbpp": "mbpp_plus",
           "mbpp500": "mbpp_plus"}


def plus_id(problem_id: str) -> str:
    """The EvalPlus id of a HumanEval or MBPP problem (``MBPP/11`` is ``Mbpp/11``)."""
    return "Mbpp/" + problem_id.split("/", 1)[1] if problem_id.startswith("MBPP/") else problem_id


def rescore_plus(records: list[dict], data_dir=None, *, backend: str | None = None) -> list[dict]:
    """The finished HumanEval and MBPP records' final programs scored on EvalPlus's base and plus tests, without a
    model call: one row per distinct (problem, program), ``code_sha256`` naming the program. A problem MBPP+ left
    out (it keeps 378 of MBPP's problems) has no row."""
    from codeforest.datasets import DATASETS
    from codeforest.loading import load_dataset
    from codeforest.scoring import score_plus, score_private

    wanted: dict[str, dict[tuple, str]] = {}
    for record in records:
        plus = PLUS_OF.get(record.get("dataset", ""))
        if plus and not record.get("error"):
            code = record.get("final_code") or ""
            wanted.setdefault(plus, {})[plus_id(record["problem_id"]), code_sha256(code)] = code
    rows = []
    for plus, programs in wanted.items():
        tasks = {t.id: t for t in load_dataset(DATASETS[plus].name, data_dir)}

        def score(item, tasks=tasks, plus=plus):
            (problem, sha), code = item
            task = tasks[problem]
            base, extra = score_private(task, code, backend=backend), score_plus(task, code, backend=backend)
            return {"problem_id": problem, "code_sha256": sha, "plus_dataset": plus, "base_passed": bool(base.passed),
                    "plus_passed": bool(extra.passed), "plus_pass_rate": extra.pass_rate, "plus_tests": extra.total}

        with ThreadPoolExecutor(max_workers=2) as pool:
            rows += pool.map(score, [item for item in programs.items() if item[0][0] in tasks])
    return rows


def code_sha256(code: str) -> str:
    """The fingerprint joining a record's final program to its plus verdict."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()
