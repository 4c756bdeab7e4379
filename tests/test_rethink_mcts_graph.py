"""RethinkMCTS driven by a scripted model: rethink, dual evaluation, fallback, budget end, final choice."""

from __future__ import annotations

import pytest

from codeforest.graphs import rethink_mcts
from codeforest.graphs.rethink_mcts import (
    FEEDBACK_CUT,
    NO_VERBAL,
    TEST_LIMIT,
    RethinkContext,
    best_program,
    build_graph,
    verbal_feedback,
)
from codeforest.suites import ExecutionResult, TestOutcome
from tests.fakes import TWO_BLOCKS, RespondingChatModel, RoleScript, thought_list

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}
ROLES = [("provide a new Thought to replace", "rethink"), ("block by block", "blocks"),
         ("correctness score in range [-1, 1]", "self_eval"), ("analyze and provide new thoughts", "expand_fb"),
         ("Reasonableness", "expand"), ("Complete the Python program", "solver")]


def Script(**replies):  # noqa: N802 (reads as the class it builds)
    return RoleScript(ROLES, **replies)


thoughts = thought_list


def code(body):
    return f"```python\ndef inc(x):\n    return {body}\n```"


def run(script, **settings):
    context = RethinkContext(structured_output=False, rethink_width=2, **settings)
    return build_graph(model=RespondingChatModel(respond=script)).invoke({"problem": PROBLEM}, context=context)


def full_script():
    return Script(
        expand=[thoughts(("Return x + 1.", 0.6), ("Return x + 2.", 0.4)),
                thoughts(("Keep it simple.", 0.5), ("Write it the other way round.", 0.5)), "no idea"],
        expand_fb=[thoughts(("Fix the constant.", 0.5), ("Use addition.", 0.5))],
        solver=[code("x + 2"), code("x + 1"), code("0"), code("0"), code("1 + x")],
        blocks=['[{"block": "BLOCK-0", "correct": false, "explanation": "adds two"}]',
                '{"block": "BLOCK-0", "correct": false, "explanation": "returns 0"}',
                '{"block": "BLOCK-0", "correct": false, "explanation": "still 0"}'],
        rethink=["Add exactly one to x.", "New thought: return the argument plus one."],
        self_eval=['{"evaluation": 0.5, "explanation": "fine"}', "Score: 0.9"],
    )


def test_three_rollouts_rethink_dual_evaluation_and_final_choice():
    script = full_script()
    out = run(script, rethink_rollouts=3)
    assert script.roles == ["expand", "solver", "blocks", "rethink", "solver", "self_eval", "expand",
                            "solver", "blocks", "rethink", "solver", "blocks", "expand_fb",
                            "solver", "self_eval", "expand"]
    nodes = out["nodes"]
    n1 = nodes["n1"]
    assert n1["text"] == "Add exactly one to x." and n1["replaced_thought"] == "Return x + 1."
    assert n1["rethinks"] == 1 and n1["prior"] == 1.0 and n1["reward"] == pytest.approx(0.8 + 0.2 * 0.5)
    assert nodes["n3"]["text"] == "return the argument plus one." and nodes["n3"]["reward"] == 0.0
    # rollout 3 at n1 (N=2): the rethought n3 (prior 1.0, N=1) ties n4 (prior 0.5, N=0) on P-UCB; the earlier wins
    assert "reward" not in nodes["n4"] and nodes["n5"]["parent"] == "n3"
    assert nodes["n5"]["reward"] == pytest.approx(0.8 + 0.2 * 0.9) and nodes["n5"]["v_llm"] == 0.9
    # visits start at 1 (the released code), then one per rollout through the node
    assert (n1["visits"], n1["q"]) == (4, pytest.approx(0.98)) and nodes["root"]["visits"] == 4
    assert (nodes["n3"]["visits"], nodes["n3"]["q"]) == (3, pytest.approx(0.98))
    assert [nodes[i]["text"] for i in ("n7", "n8")] == ["\n", "\n"]  # unreadable expansion: the fallback
    assert out["final_node"] == "n5" and "1 + x" in out["final_code"] and out["public_pass_rate"] == 1.0
    assert out["stop_reason"] == "budget_exhausted"
    assert out["cost"]["programs"] == 5 and out["cost"]["parse_failures"] == 1
    # the released code writer: its system message, the instruction, then the problem and every thought on the path
    # labelled as the released state labels it
    code_prompt = script.prompts["solver"][4]
    assert code_prompt.startswith("You are a helpful code generator that generate code to complete the given problem."
                                  "\nComplete the Python program to solve the problem.")
    assert code_prompt.endswith('"""\n\nThought: Add exactly one to x.\nThought: return the argument plus one.'
                                '\nThought: Fix the constant.')
    # every role with the released system message
    for role, system in (("expand", "You are a helpful code generator that generate code"), ("rethink", "You are an "
                         "expert programmer.\n"), ("self_eval", "You are a evaluator that evaluates the code")):
        assert script.prompts[role][0].startswith(system), role
    assert script.prompts["blocks"][0].startswith(f"You are an expert programming assistant.\n{PROBLEM['prompt']}")
    # placeholder explanations in its example answers, not the paper's (measurements/echo-check)
    assert '"explanation": "<why BLOCK-2 is wrong>"' in script.prompts["blocks"][0]
    assert "does not add the two integers" not in script.prompts["blocks"][0]
    feedback_prompt = script.prompts["expand_fb"][0]
    assert "(Execution Feedback)" in feedback_prompt and "(Block-level Analysis)" in feedback_prompt
    assert "[BLOCK-0]" in feedback_prompt and "returns 0" not in feedback_prompt and "still 0" in feedback_prompt


@pytest.mark.parametrize("flag, absent", [("rethink_rethink", "rethink"), ("rethink_self_eval", "self_eval"),
                                          ("rethink_verbal_feedback", "blocks"), ("rethink_block_info", "blocks")])
def test_ablation_switches_remove_their_component(flag, absent):
    script = Script(expand=[thoughts(("Return x + 2.", 1.0))] * 3, expand_fb=[thoughts(("Add one.", 1.0))] * 3,
                    solver=[code("x + 2"), code("x + 1"), code("x + 1")] * 2,
                    blocks=["[]"] * 5, rethink=["Add one to x."] * 3, self_eval=["0.4"] * 3)
    out = run(script, rethink_rollouts=2, **{flag: False})
    assert absent not in script.roles and out["stop_reason"] == "budget_exhausted"
    if flag == "rethink_verbal_feedback":  # the released NoVerb: the rethink hears only that some tests fail
        assert "expand_fb" not in script.roles
        assert NO_VERBAL in script.prompts["rethink"][0] and "assert inc" not in script.prompts["rethink"][0]
    if flag == "rethink_block_info":
        assert "(Execution Feedback)" in script.prompts["rethink"][0]
        assert "(Block-level Analysis)" not in script.prompts["rethink"][0]
    if flag == "rethink_self_eval":
        assert max(n.get("reward", 0) for n in out["nodes"].values()) == 1.0


def test_an_empty_rethink_keeps_the_thought():
    script = Script(expand=[thoughts(("Return x + 2.", 0.6), ("Return x + 3.", 0.4))],
                    expand_fb=[thoughts(("Add one.", 1.0))], solver=[code("x + 2")] * 2, blocks=["[]"] * 2,
                    rethink=["  \n"])
    out = run(script, rethink_rollouts=1)
    n1 = out["nodes"]["n1"]
    assert script.roles.count("rethink") == 1 and n1["rethinks"] == 1
    assert n1["text"] == "Return x + 2." and "replaced_thought" not in n1 and n1["prior"] == 0.6


def test_best_program_counts_the_first_reward_of_a_code_and_ties_go_earliest():
    programs = [{"node": "a", "code": "x", "reward": 0.5}, {"node": "b", "code": "y", "reward": 0.9},
                {"node": "c", "code": "y", "reward": 0.1}, {"node": "d", "code": "z", "reward": 0.9}]
    assert best_program(programs)["node"] == "b"
    assert best_program([]) is None


def test_new_children_evaluated_concurrently_each_count_as_a_rollout():
    def respond(messages):
        text = "\n".join(str(m.content) for m in messages)
        if "correctness score in range [-1, 1]" in text:
            return "0.5"
        if "Reasonableness" in text:
            return thoughts(("Return x + 1.", 0.5), ("Return x + 2.", 0.5))
        return code("x + 1") if "Return x + 1." in text else code("x + 2")

    model = RespondingChatModel(respond=respond)
    context = RethinkContext(structured_output=False, rethink_width=2, rethink_rollouts=3, rethink_concurrency=2,
                      rethink_rethink=False, rethink_block_info=False)
    out = build_graph(model=model).invoke({"problem": PROBLEM}, context=context)
    nodes = out["nodes"]
    assert out["stop_reason"] == "budget_exhausted" and nodes["root"]["visits"] == 4
    assert out["cost"]["programs"] == 3
    assert {i for i, n in nodes.items() if "reward" in n} == {"n1", "n3", "n4"}  # n1, then its two children at once
    assert {nodes[i]["parent"] for i in ("n5", "n6", "n7", "n8")} == {"n3", "n4"}  # disjoint ids per branch
    assert nodes["n1"]["visits"] == 4 and nodes["n3"]["visits"] == nodes["n4"]["visits"] == 2


def test_second_descent_follows_the_priors():
    """New nodes start with one visit (issue 17): after one return the root's priors count.

    Rollout 1 (root N=1, log 1 = 0) takes n1, which half-passes (reward 0.5). Rollout 2 (root N=2):
    n1 = 0.5 + β(2)·0.2·√ln 2/(1+1) = 0.855 and n2 = 0 + β(2)·0.8·√ln 2/(1+0) = 2.839, so n2, where
    counting from 0 visits would have given N=1, no exploration, and n1's child.
    """
    def respond(messages):
        text = "\n".join(str(m.content) for m in messages)
        if "Reasonableness" in text and "analyze and provide new thoughts" not in text:
            return thoughts(("Return x + 1.", 0.2), ("Return x + 2.", 0.8))
        if "Reasonableness" in text:
            return thoughts(("Deeper.", 0.5), ("Deeper still.", 0.5))
        return code("2") if "Return x + 1." in text else code("x + 1")

    context = RethinkContext(structured_output=False, rethink_width=2, rethink_rollouts=2, rethink_rethink=False,
                             rethink_block_info=False, rethink_self_eval=False)
    out = build_graph(model=RespondingChatModel(respond=respond)).invoke({"problem": PROBLEM}, context=context)
    nodes = out["nodes"]
    assert nodes["n1"]["reward"] == 0.5 and nodes["n2"]["reward"] == 1.0
    assert "reward" not in nodes["n3"] and out["final_node"] == "n2"


def test_verbal_feedback_keeps_the_released_caps():
    """At most 6 failing tests, each cut to 2048 tokens; a text over 12000 tokens is cut to 8000 (4 chars a token)."""
    def feedback(count, size):
        outcomes = [TestOutcome(f"assert f({i}) == 0", False, actual=str(i) * size) for i in range(count)]
        return verbal_feedback(PROBLEM, "def f(x): pass", ExecutionResult(0, count, outcomes),
                               RethinkContext(rethink_block_info=False), None, [])

    assert len(feedback(8, 5000).splitlines()[2:]) == 6  # 6 of the 8 failing tests, 30,000 characters in all
    assert len(feedback(1, 20000).splitlines()[2]) == TEST_LIMIT == 8192
    assert len(feedback(8, 9000)) == FEEDBACK_CUT == 32000  # 6 · 8192 characters > 48000: cut to 32000


def test_verbal_feedback_shows_a_stdin_tests_expected_output():
    stdio = {**PROBLEM, "kind": "stdio", "entry_point": None, "public_tests": [{"input": "1\n", "output": "2\n"}]}
    failing = TestOutcome("1\n", False, expected="2\n", actual="3\n", reason="wrong answer")
    text = verbal_feedback(stdio, "print(3)", ExecutionResult(0, 1, [failing]),
                           RethinkContext(rethink_block_info=False), None, [])
    assert text.endswith("# Input:\n1\n\n# Ground Truth Output:\n2\n\n# Current Execution Output: 3\n")
    released = verbal_feedback(stdio, "print(3)", ExecutionResult(0, 1, [failing]),
                               RethinkContext(rethink_block_info=False, rethink_feedback_layout="released"), None, [],
                               thoughts="\nThought: Print n + 1.")
    assert released.startswith(stdio["prompt"] + "\nThought: Print n + 1.\n\nprint(3)\n\nAbove is the combination")
    assert released.endswith("## Failed test 1: # Input:\n1\n\n# Ground Truth Output:\n2\n\n\n"
                             "# Current Execution Output: \n3\n \n")


LOOPS_ON_5 = "```python\ndef inc(x):\n    while x == 5:\n        pass\n    return x + 1\n```"


@pytest.mark.parametrize("reply, failed, v_test", [
    (code("str(x + 1)"), "\nassert inc(1) == 2\n\n# Current Execution Output: \n2", 0.0),  # str(), not repr()
    # the released harness's frames: 16 import lines, the fence's line break, the program, three line breaks
    (code("1 / 0"), '\nassert inc(1) == 2\n\n# Current Execution Output: \nFile "inc.py", line 23, in <module>\n'
     'assert inc(1) == 2\nFile "inc.py", line 19, in inc\n    return 1 / 0\nZeroDivisionError: division by zero', 0.0),
    # a test out of time: the released executor stops waiting and reports 21 placeholders, a pass rate of 0
    (LOOPS_ON_5, "Unknown test\n\n# Current Execution Output: \nThe code executes failed! No result got!", 0.0),
])
def test_released_layout_shows_a_failing_assert_as_the_released_executor_reports_it(reply, failed, v_test):
    script = Script(expand=[thoughts(("Return x + 1.", 1.0))], expand_fb=[thoughts(("Add one.", 1.0))], solver=[reply])
    out = run(script, rethink_rollouts=1, rethink_max_rethinks=0, rethink_block_info=False,
              rethink_feedback_layout="released", test_timeout=1)
    node = out["nodes"]["n1"]
    assert node["reward"] == v_test
    tests = node["verbal_feedback"].split("Here are the test cases the code doesn't pass: \n")[1]
    assert tests.startswith(f"\n\n## Failed test 1: {failed}")
    if reply == LOOPS_ON_5:  # six of the 21 are shown, as the released feedback lists six
        assert tests == "".join(f"\n\n## Failed test {i}: {failed}" for i in range(1, 7)) + " \n"
        assert node["execution"]["passed"] == 1  # codeforest's own verdict: inc(1) passes, inc(5) times out


@pytest.mark.parametrize("layout, reward", [("released", 1.0), ("paper", 0.0)])
def test_the_released_layout_judges_the_reply_as_its_executor_reads_it(layout, reward):
    script = Script(expand=[thoughts(("Return x + 1.", 1.0))] * 2, expand_fb=[thoughts(("Add one.", 1.0))],
                    solver=[TWO_BLOCKS])
    out = run(script, rethink_rollouts=1, rethink_max_rethinks=0, rethink_block_info=False,
              rethink_feedback_layout=layout, rethink_self_eval=False, test_timeout=1)
    node = out["nodes"]["n1"]
    assert node["reward"] == reward
    assert node["code"].endswith("return shifted + 2")  # the node keeps codeforest's reading of the reply


def test_released_no_verbal_rethink_and_the_layout_refused_with_the_verifier_locator():
    script = Script(expand=[thoughts(("Return x + 2.", 1.0))] * 3, expand_fb=[thoughts(("Add one.", 1.0))] * 3,
                    solver=[code("x + 2"), code("x + 1"), code("x + 1")] * 2, rethink=["Add one to x."] * 3,
                    self_eval=["0.4"] * 3)
    run(script, rethink_rollouts=2, rethink_verbal_feedback=False, rethink_feedback_layout="released")
    prompt = script.prompts["rethink"][0]
    assert ("New experience: " + PROBLEM["prompt"] + "\nThought: Return x + 2.\n\n def inc(x):\n    return x + 2\n\n"
            "Above is the combination of problem + thoughts & reflections + code.") in prompt
    assert prompt.endswith("doesn't pass some test cases.\n") and "assert inc" not in prompt
    with pytest.raises(ValueError, match="use the paper layout with the Verifier"):
        RethinkContext(rethink_locate="verifier", rethink_feedback_layout="released")
    with pytest.raises(ValueError, match="use rethink_concurrency=1"):  # siblings would rewrite a shared thought
        RethinkContext(rethink_locate="verifier", rethink_concurrency=3)


def test_released_feedback_layout_reaches_the_expansion_and_the_rethink():
    paper, released = full_script(), full_script()
    run(paper, rethink_rollouts=3)
    run(released, rethink_rollouts=3, rethink_feedback_layout="released")
    assert released.roles == paper.roles  # the same search, only the texts differ
    rethink_prompt = released.prompts["rethink"][0]
    assert rethink_prompt.startswith(
        "You are an expert programmer.\nBased on your previous thoughts and the new experience, please provide a new "
        "Thought to replace the previous one thought. This new thought should avoid the mistake.Remember that")
    assert ("not the code. \nNew experience: " + PROBLEM["prompt"] + "\nThought: Return x + 1.\n\ndef inc(x):\n"
            "    return x + 2\n\nAbove is the combination of problem + thoughts & reflections + code.") \
        in rethink_prompt
    assert ("doesn't pass some test cases. Here are the test cases the code doesn't pass: \n\n\n## Failed test 1: \n"
            "assert inc(1) == 2\n\n# Current Execution Output: \n3") in rethink_prompt
    assert ("the analysis of the mistaken block is given:\n## Failed test: \n\nassert inc(1) == 2\n\n"
            "# Current Execution Output: \n3\n# Trace blocks debugging:\n[BLOCK-0]") in rethink_prompt
    assert "(Execution Feedback)" not in rethink_prompt and "```python" not in rethink_prompt
    expansion = released.prompts["expand_fb"][0]
    body = expansion.split("\n", 1)[1]  # after the system message
    assert body.startswith(PROBLEM["prompt"]) and "Above is the combination of problem + thoughts" in body
    assert body.index("Above is the combination") < body.index("I need you to analyze and provide new thoughts")


def test_the_released_layout_gives_a_programs_tests_one_shared_time(monkeypatch):
    """The released executor waits for all of a program's tests at once: under the released layout the sandbox run
    has that time in all (here 1 s, each test's own limit), so inc(5) after the loop on inc(1) is not run; under the
    paper's layout it runs and passes."""
    monkeypatch.setattr(rethink_mcts, "RELEASED_JOIN_S", 1.0)
    loops_on_1 = "```python\ndef inc(x):\n    while x == 1:\n        pass\n    return x + 1\n```"
    passed = {}
    for layout in ("paper", "released"):
        script = Script(expand=[thoughts(("Return x + 1.", 1.0))], expand_fb=[thoughts(("Add one.", 1.0))],
                        solver=[loops_on_1])
        out = run(script, rethink_rollouts=1, rethink_max_rethinks=0, rethink_block_info=False,
                  rethink_feedback_layout=layout, test_timeout=1)
        passed[layout] = out["nodes"]["n1"]["execution"]["passed"]
    assert passed == {"paper": 1, "released": 0}
