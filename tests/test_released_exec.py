"""A failing test as the released executors report it, run in a real sandbox: the HumanEval executors' frames' line
numbers of their layout (16 import lines, the program, the assert), the value returned, TIMEOUT; CodePRM's
placeholders for a run its executor would not have waited for, as GVR shows them under ``gvr_error_text=released``;
and CodeTree's two executors, its program run as its own file."""

from __future__ import annotations

from codeforest.graphs import gvr
from codeforest.suites import ExecutionResult, TestOutcome
from codeforest.tools.released_exec import (
    CODEPRM_LABEL,
    RETHINK_LABEL,
    RPM_LABEL,
    codetree_function_failures,
    codetree_stdin_failures,
    released_failed_texts,
    released_failures,
    results_text,
    unfinished_in_join,
)
from tests.fakes import TWO_BLOCKS, RespondingChatModel, RoleScript

ASSERT = "assert inc(1) == 2"


def test_a_wrong_value_is_the_value_returned_and_the_assert_line_follows_the_layout():
    # fenced: the text after "```python" starts with a line break, so 16 imports, a blank, def (18), return (19),
    # then four line breaks (the program's, the executor's, the join's, the assert's own) put the assert on 23
    [failure] = released_failures("```python\ndef inc(x):\n    return x + 2\n```", [ASSERT], "inc",
                                  label=CODEPRM_LABEL, limit=2)
    assert failure == {"error": f'File "inc.py", line 23, in <module>\n{ASSERT}\nAssertionError',
                       "output": f"\n{ASSERT}\n\n# Current Execution Output:\n3"}


def test_an_error_shows_the_frames_from_the_first_in_the_program():
    [failure] = released_failures("def inc(x):\n    return 1 / 0\n", [ASSERT], "inc", label=RPM_LABEL, limit=2)
    frames = (f'File "inc.py", line 22, in <module>\n{ASSERT}\nFile "inc.py", line 18, in inc\n    return 1 / 0\n'
              "ZeroDivisionError: division by zero")
    assert failure == {"error": frames, "output": f"\n{ASSERT}\n\n# Real Execution Output: \n{frames}"}
    assert results_text([True, False], [failure]) == str([[True, ""], [False, failure]])


def test_a_test_out_of_time_reads_timeout():
    [failure] = released_failures("def inc(x):\n    while True:\n        pass\n", [ASSERT], "inc",
                                  label=CODEPRM_LABEL, limit=1)
    assert failure["error"] == "TIMEOUT" and failure["output"].endswith("# Current Execution Output:\nTIMEOUT")


def test_the_released_join_gives_up_on_a_test_out_of_time_or_a_run_past_ten_seconds():
    quick = TestOutcome(test=ASSERT, passed=False)
    assert not unfinished_in_join(ExecutionResult(0, 1, [quick], wall_s=9.9))
    assert unfinished_in_join(ExecutionResult(0, 1, [quick], wall_s=10.1))
    assert unfinished_in_join(ExecutionResult(0, 1, [TestOutcome(test=ASSERT, passed=False, timed_out=True)]))


def test_released_failed_texts_caps_the_failing_tests_or_gives_the_placeholders_of_an_unfinished_run():
    wrong = "def inc(x):\n    return x + 2\n"
    failing = [TestOutcome(test=f"assert inc({k}) == {k + 1}", passed=False) for k in range(3)]
    ran = ExecutionResult(0, 4, [TestOutcome(test="assert inc(9) == 10", passed=True), *failing], wall_s=0.1)
    texts = released_failed_texts(wrong, ran, "inc", label=RETHINK_LABEL, limit=2, cap=2)
    assert texts == [f"\nassert inc({k}) == {k + 1}\n\n# Current Execution Output: \n{k + 2}" for k in range(2)]
    passed = ExecutionResult(1, 1, [TestOutcome(test="assert inc(9) == 10", passed=True)], wall_s=0.1)
    assert released_failed_texts(wrong, passed, "inc", label=RETHINK_LABEL, limit=2) == []
    slow = ExecutionResult(1, 1, [TestOutcome(test="assert inc(9) == 10", passed=True)], wall_s=10.5)
    assert released_failed_texts(wrong, slow, "inc", label=RETHINK_LABEL, limit=2) == [
        "Unknown test\n\n# Current Execution Output: \nThe code executes failed! No result got!"] * 21


def test_gvr_shows_the_released_placeholders_for_a_program_that_never_returns():
    """Under gvr_error_text=released a program running out of time reads as the released executor's 21
    placeholder failures (the feedback shows the first 5) and a pass rate of 0, though one test passes."""
    problem = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
               "entry_point": "inc", "public_tests": [ASSERT, "assert inc(0) == 1"]}
    hangs = "```python\ndef inc(x):\n    while x:\n        pass\n    return 1\n```"  # inc(0) passes, inc(1) hangs
    two = '[{"Thought-1": " Loop.", "Reasonableness": 0.6}, {"Thought-2": " Add.", "Reasonableness": 0.4}]'
    script = RoleScript([("find which thought is flawed", "locate"), ("Revise and enhance the", "refine"),
                         ("doesn't pass some test cases", "expand_fb"), ("Reasonableness", "expand"),
                         ("Complete the Python program", "solver")],
                        expand=[two], solver=[hangs], locate=['{"problematic id": 1}'], refine=[], expand_fb=[two])
    context = gvr.GvrContext(structured_output=False, gvr_width=2, gvr_rollouts=1, gvr_reward="pub_test",
                             gvr_verify="llm_locate", gvr_max_refines=0, gvr_error_text="released", test_timeout=1.0)
    out = gvr.build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": problem}, context=context)
    leaf = out["nodes"]["n1"]
    assert leaf["execution"]["passed"] == 1 and leaf["value"] == 0.0
    placeholder = "Unknown test\n\n# Current Execution Output:\nThe code executes failed! No result got!"
    assert leaf["feedback"] == "\n\n".join(f"## Failed test {k}: \n{placeholder}" for k in range(1, 6))
    assert placeholder in script.prompts["expand_fb"][0]


RELEASED_FILE = "/tmp/codeforest-test-released/temp_files/temp_test7.py"


def test_codetree_stdin_failures_are_the_released_texts_of_a_program_run_as_its_file():
    """Run as the released file: an error is Python's own traceback naming that file (a whole-line statement, so no
    caret line), a time-out the subprocess's text naming 'python' and the file as the released code runs it, a wrong
    output the released block; a test the program passes is None."""
    program = ("n = int(input())\nif n == 1:\n    raise ValueError('one')\nwhile n == 2:\n    pass\n"
               "print(n * 2 if n == 3 else n)\n")
    texts = codetree_stdin_failures(program, [("1\n", "2"), ("2\n", "4"), ("3\n", "6"), ("4\n", "8")],
                                    RELEASED_FILE, 1)
    assert texts == [
        "1\nProgram's Output: Traceback (most recent call last):\n"
        f'  File "{RELEASED_FILE}", line 3, in <module>\n'
        "    raise ValueError('one')\nValueError: one\n",
        "2\nProgram's Output: Command '['python', 'temp_files/temp_test7.py']' timed out after 1 seconds",
        None,
        "Input:\n4\nExpected Output:\n8\nProgram's Output:\n4\n" + "-" * 29,
    ]


def test_codetree_function_failures_judge_by_the_files_exit_and_print_the_call_as_released():
    """A pass is a clean exit of the program and the assert; a failing call is printed from the output file after
    the program (astunparse's ``f((- 1))``), its stderr then its stdout (the program's own prints too); a loop is
    the released time-out text. The output file's lines: 7 import lines, a blank, the program from line 9."""
    program = ("def f(x):\n    if x < 0:\n        raise ValueError('neg')\n    while x == 2:\n        pass\n"
               "    print('debug')\n    return x + 1\n")
    tests = ["assert f(1) == 2", "assert f(-1) == 0", "assert f(2) == 3", "assert f(3) == 5"]
    passed, raised, looped, wrong = codetree_function_failures(program, tests, RELEASED_FILE, 1)
    output_file = RELEASED_FILE.replace("temp_test7", "temp_test_output7")
    assert passed is None
    assert raised.startswith("assert f(-1) == 0 # incorrect program's output: Traceback (most recent call last):\n")
    assert f'  File "{output_file}", line 17, in <module>\n    print(f((- 1)))\n' in raised
    assert raised.endswith(f'  File "{output_file}", line 11, in f\n    raise ValueError(\'neg\')\nValueError: neg\n')
    assert looped == "assert f(2) == 3 # incorrect program's output: Program Timed Out after 1 seconds."
    assert wrong == "assert f(3) == 5 # incorrect program's output: debug\n4\n"


def test_gvr_under_the_released_text_gives_a_programs_tests_one_shared_time(monkeypatch):
    """The released executor waits for all of a program's tests at once: under gvr_error_text=released the
    sandbox run has that time in all (here 1.5 s for tests of 1 s each), so the quick test after two loops is not
    run; under the line text it runs and passes."""
    monkeypatch.setattr(gvr, "RELEASED_JOIN_S", 1.5)
    problem = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
               "entry_point": "inc", "public_tests": [ASSERT, "assert inc(2) == 3", "assert inc(0) == 1"]}
    hangs = "```python\ndef inc(x):\n    while x:\n        pass\n    return 1\n```"
    two = '[{"Thought-1": " Loop.", "Reasonableness": 0.6}, {"Thought-2": " Add.", "Reasonableness": 0.4}]'
    passed = {}
    for text in ("line", "released"):
        script = RoleScript([("find which thought is flawed", "locate"), ("Revise and enhance the", "refine"),
                             ("doesn't pass some test cases", "expand_fb"), ("Reasonableness", "expand"),
                             ("Complete the Python program", "solver")],
                            expand=[two], solver=[hangs], locate=[], refine=[], expand_fb=[two])
        context = gvr.GvrContext(structured_output=False, gvr_width=2, gvr_rollouts=1, gvr_reward="pub_test",
                                 gvr_verify="llm_locate", gvr_max_refines=0, gvr_error_text=text, test_timeout=1.0)
        out = gvr.build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": problem}, context=context)
        passed[text] = out["nodes"]["n1"]["execution"]["passed"]
    assert passed == {"line": 1, "released": 0}


def test_a_reply_written_again_keeps_its_released_failures_for_the_run(monkeypatch):
    """The released code keeps a reply's feedback with its reward (cached_verbal_feedback): two rollouts writing
    the same wrong reply run its failing tests in the released harness once, and both leaves show them."""
    from codeforest.graphs import kit

    ran = []

    def counting(text, result, entry, **kwargs):
        ran.append(text)
        return real(text, result, entry, **kwargs)

    real = kit.released_failed_texts
    monkeypatch.setattr(kit, "released_failed_texts", counting)
    problem = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
               "entry_point": "inc", "public_tests": [ASSERT]}
    wrong = "```python\ndef inc(x):\n    return x + 2\n```"
    two = '[{"Thought-1": " Add.", "Reasonableness": 0.6}, {"Thought-2": " Sum.", "Reasonableness": 0.4}]'
    script = RoleScript([("doesn't pass some test cases", "expand_fb"), ("Reasonableness", "expand"),
                         ("Complete the Python program", "solver")],
                        expand=[two], solver=[wrong] * 2, expand_fb=[two] * 2)
    context = gvr.GvrContext(structured_output=False, gvr_width=2, gvr_rollouts=2, gvr_reward="pub_test",
                             gvr_max_refines=0, gvr_error_text="released")
    out = gvr.build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": problem}, context=context)
    leaves = [n for n in out["nodes"].values() if n.get("code")]
    assert script.roles.count("solver") == 2 and len(ran) == 1 and ran[0] == wrong
    assert len(leaves) == 2 and leaves[0]["feedback"] == leaves[1]["feedback"] and ASSERT in leaves[0]["feedback"]


def test_gvr_under_the_released_text_judges_the_reply_as_its_executor_reads_it():
    """The released executor runs a reply's first python block after its import lines: a first block using
    ``math`` unimported passes there, while codeforest's own reading takes the longer block defining the entry."""
    problem = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
               "entry_point": "inc", "public_tests": [ASSERT, "assert inc(5) == 6"]}
    two = '[{"Thought-1": " Add.", "Reasonableness": 0.6}, {"Thought-2": " Sum.", "Reasonableness": 0.4}]'
    passed = {}
    for text in ("line", "released"):
        script = RoleScript([("doesn't pass some test cases", "expand_fb"), ("Reasonableness", "expand"),
                             ("Complete the Python program", "solver")],
                            expand=[two] * 2, solver=[TWO_BLOCKS], expand_fb=[two])
        context = gvr.GvrContext(structured_output=False, gvr_width=2, gvr_rollouts=1, gvr_reward="pub_test",
                                 gvr_max_refines=0, gvr_error_text=text, test_timeout=2.0)
        out = gvr.build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": problem}, context=context)
        node = out["nodes"]["n1"]
        passed[text] = node["execution"]["passed"]
        assert node["code"].endswith("return shifted + 2")  # the node keeps codeforest's reading
    assert passed == {"line": 0, "released": 2}
