"""RPM-MCTS driven by a scripted model over a real knowledge base on disk: the sibling filter, K and critic
values, a failed roll-out (block trace, error-step location, grafting, reflection), the success stop, the
knowledge-base guards, and the pure rules with hand-computed numbers."""

from __future__ import annotations

import random

import pytest

from codeforest.graphs.rpm_mcts import (
    RpmContext,
    backed_up,
    best_child,
    build_graph,
    final_choice,
    initial_value,
    kept_siblings,
    selection_score,
    solution_value,
)
from codeforest.tools.knowledge import KnowledgeBase, KnowledgeError, fingerprint
from tests.fakes import RespondingChatModel

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}
ROLES = [("based on the programming problem.", "topic"), ("correct **next step**", "next"),
         ("act as an evaluator", "critic"), ("Wrong code and reflections:", "reroll"), ("<edit>yes</edit>", "edit"),
         ("complete all remaining steps", "roll"),
         ("code implementer", "code"), ("Test case debug information", "locate"),
         ("break down each solution", "extract"),
         ("Execute results on test cases", "evaluate"), ("block by block", "blocks")]


class Script:
    def __init__(self, **replies):
        self.replies = {k: list(v) for k, v in replies.items()}
        self.roles, self.prompts, self.kwargs = [], {}, []

    def __call__(self, messages, **kwargs):
        text = "\n".join(str(m.content) for m in messages)
        role = next(r for key, r in ROLES if key in text)
        self.roles.append(role)
        self.kwargs.append(kwargs)
        self.prompts.setdefault(role, []).append(text)
        assert self.replies.get(role), f"no scripted reply left for {role}"
        return self.replies[role].pop(0)


def code(body):
    return f"```python\ndef inc(x):\n    return {body}\n```"


@pytest.fixture(scope="module")
def kb_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("kb")
    record = {"id": "K/1", "source": "mine", "topic": "Mathematics and Number Theory",
              "prompt": "Write a function that returns its integer argument increased by one.",
              "steps": ["Step 1: Add one to the argument.", "Step 2: Return the sum."]}
    KnowledgeBase(path, create=True).add([{**record, "fingerprint": fingerprint(record["prompt"])}])
    return str(path)


def run(script, kb_path, problem=PROBLEM, **settings):
    settings = {"rpm_edit": False, "rpm_rerollout": False, **settings}  # Alg. 1 as printed, unless a test asks
    context = RpmContext(kb_path=kb_path, structured_output=False, **settings)
    return build_graph(model=RespondingChatModel(respond=script, pass_kwargs=True)).invoke({"problem": problem},
                                                                                         context=context)


def test_a_standard_input_problem_gets_a_whole_program():
    """The released implementer asks for functions only (the paper turns stdin problems into functions first):
    a standard-input problem is asked for a program that reads its input, and that program passes."""
    stdio = {"id": "S/sum", "prompt": "Read two ints, print their sum.", "kind": "stdio", "entry_point": None,
             "public_tests": [{"input": "1 2\n", "output": "3\n"}]}
    script = Script(next=["Next step: Read both numbers."], critic=["<score>8</score>"],
                    roll=["Step 1: Read both numbers.\nStep 2: Print their sum."],
                    code=["```python\na, b = map(int, input().split())\nprint(a + b)\n```"],
                    evaluate=["<evaluation>10</evaluation>"])
    out = run(script, "", problem=stdio, rpm_kb=False, rpm_width=1)
    assert "reads the input from standard input" in script.prompts["code"][0]
    assert "without main function" not in script.prompts["code"][0]
    assert out["stop_reason"] == "solved" and out["public_pass_rate"] == 1.0


@pytest.mark.parametrize("reflection, reflected", [("evaluator", "Off by one."), ("locator", "add exactly one")])
def test_a_failed_rollout_is_located_grafted_and_reflected_then_a_passing_one_ends_the_search(kb_path, reflection,
                                                                                             reflected):
    """The reflection left on the path is the evaluator's analysis (Alg. 1, released) or the locator's."""
    script = Script(
        topic=["It adds numbers.\n<topic>Mathematics and Number Theory</topic>"],
        next=["Next step: Add one to the argument.", "Next step: Add one to the argument.",
              "Next step: Square the argument.",
              "Next step: Add exactly one, not two.", "Next step: Return x + 1 directly.", "Next step: Use 1 + x."],
        critic=["Fine.\n<score>7</score>", "Wrong.\n<score>2</score>",
                "<score>8</score>", "<score>6</score>", "<score>5</score>"],
        roll=["Step 1: Add one to the argument.\nStep 2: Add one more.\nStep 3: Return it.",
              "Step 1: Add one to the argument.\nStep 2: Add exactly one, not two.\nStep 3: Return it."],
        code=[code("x + 2"), code("x + 1")],
        evaluate=["Off by one.\n<evaluation>2.0</evaluation>", "Correct.\n<evaluation>9.5</evaluation>"],
        blocks=['[{"block": "BLOCK-0", "correct": false, "explanation": "adds two"}]'],
        locate=["<step_n>3</step_n> Step 2 is right but step 3 must not add again: add exactly one."],
    )
    out = run(script, kb_path, rpm_width=3, rpm_reflection=reflection)
    nodes = out["nodes"]
    assert script.roles == ["topic", "next", "next", "next", "critic", "critic", "roll", "code", "evaluate",
                            "blocks", "locate", "next", "next", "next", "critic", "critic", "critic", "roll", "code",
                            "evaluate"]
    assert nodes["root"]["topic"] == "Mathematics and Number Theory"  # the KB filter, kept in the tree
    # the block analysis: the problem first, placeholder example explanations (not the paper's, which the model
    # copies), and the code writer sees the public tests as every other role does (SPEC 2.6)
    assert script.prompts["blocks"][0].startswith(PROBLEM["prompt"]) and "<why BLOCK-2 is wrong>" in \
        script.prompts["blocks"][0] and "does not add the two integers together" not in script.prompts["blocks"][0]
    assert all("public tests: \nassert inc(1) == 2" in p for p in script.prompts["code"])
    # expansion 1: the repeated proposal is filtered out; K from the KB, V0 = the critic's score (paper)
    first = [n for n in nodes.values() if n.get("parent") == "root"]
    assert [n["text"] for n in first] == ["Add one to the argument.", "Square the argument."]
    assert [n["step_score"] for n in first] == [7.0, 2.0] and first[0]["kb_reward"] > first[1]["kb_reward"] > 0
    n1 = nodes["n1"]
    # roll-out 1: pass 0/2, LLM 2 -> Q = 0.5*0 + 0.5*2 = 1 (n1's Q now: the mean of its one return); step 3 wrong:
    # the rolled step 2 is grafted below n1
    assert n1["llm_score"] == 2.0 and n1["visits"] == 1 and n1["value"] == pytest.approx(1.0)
    grafted = [n for n in nodes.values() if n.get("grafted")]
    assert [(n["text"], n["parent"], n["value"], n["visits"]) for n in grafted] == [
        ("Add one more.", "n1", 1.0, 1),  # roll-out 1's step before the wrong one, valued Q = 1
        ("Return it.", "n4", 0.5 * 10 + 0.5 * 9.5, 1)]  # roll-out 2's new step, which passed
    assert reflected in n1["reflection"] and "adds two" in script.prompts["locate"][0]
    assert ("add exactly one" in n1["reflection"]) == (reflection == "locator")
    assert nodes["n3"]["reflection"] == n1["reflection"] and not nodes["n2"].get("reflection")  # on n1's path
    assert not any(reflected in p for p in script.prompts["next"][3:])  # so not in n2's expansion
    # selection 2 (N(root) = 1, so no exploration term): n2's prior (2 + 5·K) beats n1's return (1 + 5·K, K only
    # 0.04 higher); the critic's best of n2's children, n4, rolls out and passes
    assert nodes["n2"]["kb_reward"] < nodes["n1"]["kb_reward"] < nodes["n2"]["kb_reward"] + 0.2
    assert [nodes[i]["parent"] for i in ("n4", "n5", "n6")] == ["n2"] * 3 and out["final_node"] == "n7"
    assert out["stop_reason"] == "solved" and "x + 1" in out["final_code"] and out["public_pass_rate"] == 1.0
    solved = nodes[out["final_node"]]
    assert solved["passing"] and solved["final_code"] == out["final_code"]
    assert out["cost"]["programs"] == 2 and out["cost"]["llm_calls"] == 20
    # every role samples at 0.7 with a seed of its own (the released code), except the topic and the block
    # analysis (LDB), which are greedy
    sampled = [k for k in script.kwargs if "seed" in k]
    assert {k["temperature"] for k in sampled} == {0.7} and len({k["seed"] for k in sampled}) == len(sampled) == 18
    assert [r for r, k in zip(script.roles, script.kwargs, strict=True) if "seed" not in k] == ["topic", "blocks"]


def test_budget_end_regenerates_the_best_nodes_code(kb_path):
    script = Script(topic=["<topic>Other</topic>"], next=["Next step: Return x."], critic=["<score>4</score>"],
                    roll=["Step 1: Return x."], code=[code("x"), code("x + 1")],
                    evaluate=["Wrong.\n<evaluation>1</evaluation>"], locate=["Nothing to say."])
    out = run(script, kb_path, rpm_width=1, rpm_rollouts=1, rpm_ldb=False)
    assert script.roles == ["topic", "next", "critic", "roll", "code", "evaluate", "locate", "code"]
    assert out["stop_reason"] == "budget_exhausted" and out["final_node"] == "n1"
    assert "x + 1" in out["final_code"] and out["public_pass_rate"] == 1.0  # the regenerated program, tested
    assert out["cost"]["parse_failures"] == 1  # the locator's unreadable step: its fallback, the simulated one


def test_an_unreadable_location_blames_the_simulated_step_and_asks_the_node_editor():
    """The released fallback: the simulated step is taken as the wrong one, so nothing is grafted and the node
    editor is asked about it."""
    script = Script(next=["Next step: Return x."], critic=["<score>4</score>"],
                    roll=["Step 1: Return x.\nStep 2: Return it."], code=[code("x"), code("x + 1")],
                    evaluate=["Wrong.\n<evaluation>1</evaluation>"], locate=["Nothing to say."],
                    edit=["<edit>no</edit>"])
    out = run(script, "", rpm_kb=False, rpm_width=1, rpm_rollouts=1, rpm_ldb=False, rpm_edit=True)
    assert script.roles == ["next", "critic", "roll", "code", "evaluate", "locate", "edit", "code"]
    assert not any(n.get("grafted") for n in out["nodes"].values())


def test_knowledge_base_guards(kb_path, tmp_path):
    held = {**PROBLEM, "prompt": "Write a function that returns its integer argument increased by one."}
    script = Script()
    with pytest.raises(KnowledgeError, match="holds this problem .*mine K/1.*other than the one you evaluate"):
        build_graph(model=RespondingChatModel(respond=script, pass_kwargs=True)).invoke(
            {"problem": held}, context=RpmContext(kb_path=kb_path))
    with pytest.raises(KnowledgeError, match="No knowledge base at .*codeforest kb build.*rpm_kb=false"):
        build_graph(model=RespondingChatModel(respond=script, pass_kwargs=True)).invoke(
            {"problem": PROBLEM}, context=RpmContext(kb_path=str(tmp_path / "none")))
    assert script.roles == []  # both before any model call
    ablated = Script(next=["Next step: Add one."], critic=["<score>9</score>"], roll=["Step 1: Add one."],
                     code=[code("x + 1")], evaluate=["<evaluation>10</evaluation>"])
    out = run(ablated, kb_path=str(tmp_path / "none"), rpm_kb=False, rpm_width=1)
    assert ablated.roles == ["next", "critic", "roll", "code", "evaluate"] and out["stop_reason"] == "solved"
    assert out["nodes"]["n1"]["kb_reward"] == 0.0


def test_the_kb_embedder_setting_embeds_the_sibling_filter_and_refuses_a_kb_of_another_embedder(kb_path):
    """kb_embedder=openai:MODEL: the sibling filter's proposals are embedded at kb_embedder_base_url (two equal
    proposals, cosine 1 > 0.85: one kept); a KB built with WordLlama is refused under it before any model call."""
    from codeforest.tools.knowledge import WordLlamaEmbeddings
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI([], embed=WordLlamaEmbeddings().embed_documents) as endpoint:
        remote = {"kb_embedder": "openai:wl-256", "kb_embedder_base_url": endpoint.url}
        script = Script(next=["Next step: Add one to the argument."] * 2, critic=["<score>9</score>"],
                        roll=["Step 1: Add one to the argument."], code=[code("x + 1")],
                        evaluate=["<evaluation>10</evaluation>"])
        out = run(script, "", rpm_kb=False, rpm_width=2, **remote)
        assert script.roles == ["next", "next", "critic", "roll", "code", "evaluate"]
        assert out["stop_reason"] == "solved" and [n["text"] for n in out["nodes"].values()
                                                   if n.get("parent") == "root"] == ["Add one to the argument."]
        assert [r["model"] for r in endpoint.requests] == ["wl-256"]
        refused = Script()
        # refused when opened (built with WordLlama), or when already open in this process with WordLlama
        with pytest.raises(KnowledgeError, match="with embeddings 'wordllama.*"):
            run(refused, kb_path, **remote)
        assert refused.roles == [] and len(endpoint.requests) == 1


def test_the_guard_refuses_a_reworded_problem_of_another_dataset_before_any_model_call(data_dir, tmp_path):
    """apps_stdio150's APPS/3917 is codecontests150's CodeContests/1190 reworded: a KB holding the latter refuses
    the former at the graph's start (text 0.956, cosine over 0.95)."""
    from codeforest.loading import load_problem
    from codeforest.tools.knowledge import PACKAGED_STEPS, read_steps

    base = KnowledgeBase(tmp_path / "kb", create=True)
    base.add(r for r in read_steps(PACKAGED_STEPS) if r["id"] == "CodeContests/1190")
    problem = load_problem("apps_stdio150", "APPS/3917", data_dir).problem
    script = Script()
    with pytest.raises(KnowledgeError, match="CodeContests/1190.*near-duplicate"):
        run(script, str(tmp_path / "kb"), problem=problem)
    assert script.roles == []


def test_selection_values_and_backup_by_hand():
    paper, released = RpmContext(rpm_kb=False), RpmContext(rpm_kb=False, rpm_selection="released")
    child = {"value": 6.0, "visits": 1, "kb_reward": 0.4}
    # paper: Q + β·sqrt(ln N / (1 + n)) + α·10·K = 6 + 0.5·sqrt(ln 4 / 2) + 0.5·4
    assert selection_score(child, 4, paper) == pytest.approx(6 + 0.5 * (2 ** 0.5 * 0.5 ** 0.5) * (0.6931 ** 0.5) + 2,
                                                              rel=1e-3)
    # released: V + β·sqrt(2 ln N / n); unvisited: V + 8
    assert selection_score(child, 4, released) == pytest.approx(6 + 0.5 * (2 * 1.3863) ** 0.5, rel=1e-3)
    assert selection_score({**child, "visits": 0}, 4, released) == 14.0
    assert initial_value(6, 0.4, paper) == 6 and initial_value(6, 0.4, released) == 6  # no KB: the critic's
    with_kb = RpmContext(rpm_selection="released")
    assert initial_value(6, 0.4, with_kb) == pytest.approx(0.5 * 6 + 2)
    assert solution_value(0.5, 8, paper) == pytest.approx(0.5 * 5 + 0.5 * 8)
    assert kept_siblings([[1, 0.9, 0.2], [0.9, 1, 0.1], [0.2, 0.1, 1]], 0.85) == [0, 2]
    nan = float("nan")  # WordLlama embeds an empty step as NaN: it is similar to nothing (the released filter)
    assert kept_siblings([[nan, nan, nan], [nan, 1, nan], [nan, nan, nan]], 0.85) == [0, 1, 2]
    nodes = {"root": {"id": "root", "parent": None, "visits": 2, "value": 6.0, "order": 0},
             "a": {"id": "a", "parent": "root", "visits": 1, "value": 4.0, "order": 1},
             "b": {"id": "b", "parent": "root", "visits": 1, "value": 8.0, "order": 2},
             "c": {"id": "c", "parent": "b", "visits": 0, "value": 7.0, "order": 3}}
    updates = backed_up(nodes, "a", 1.0, "released")  # a: 0.5·4 + 0.5·1 = 2.5, 2 visits; root: (2.5·2 + 8·1) / 3
    assert updates == {"a": {"value": 2.5, "visits": 2}, "root": {"value": pytest.approx(13 / 3), "visits": 3}}
    # the paper's Q, the mean of the returns: a (4 + 1) / 2; root (6·2 + 1) / 3; an unvisited node's prior goes
    updates = backed_up(nodes, "a", 1.0, "paper")
    assert updates == {"a": {"value": 2.5, "visits": 2}, "root": {"value": pytest.approx(13 / 3), "visits": 3}}
    updates = backed_up(nodes, "c", 1.0, "paper")
    assert updates == {"c": {"value": 1.0, "visits": 1}, "b": {"value": 4.5, "visits": 2},
                       "root": {"value": pytest.approx(13 / 3), "visits": 3}}
    assert backed_up(nodes, "c", 1.0, "released")["b"] == {"value": 0.5 * 7 + 0.5, "visits": 2}
    passing = {**nodes, "a": {**nodes["a"], "value": 1.0, "passing": True}}
    assert final_choice(passing, "paper") == final_choice(passing, "released") == "a"  # a passing roll-out first
    assert final_choice(nodes, "released") == "b"  # the highest-valued step
    assert final_choice(nodes, "paper") == "c"  # the paper: the highest-valued leaf
    tied = {"root": {"id": "root", "parent": None, "visits": 4, "order": 0},
            **{k: {"id": k, "parent": "root", "value": v, "visits": 1, "order": i}
               for i, (k, v) in enumerate((("x", 5.0), ("y", 5.0), ("z", 1.0)), 1)}}
    picks = [best_child(tied, "root", paper, random.Random(seed)) for seed in range(20)]
    assert set(picks) == {"x", "y"}  # ties are random, seeded per rollout; never the lower-scored z
    assert picks == [best_child(tied, "root", paper, random.Random(seed)) for seed in range(20)]


@pytest.mark.parametrize("selection, llm, n1_value, expanded_second", [
    ("paper", 8, 6.5, "n1"), ("released", 8, 0.5 * 8 + 0.5 * 6.5, "n2"), ("paper", 5, 5.0, "n2")])
def test_exact_values_and_the_second_expansion_under_both_selection_readings(selection, llm, n1_value,
                                                                             expanded_second):
    """Roll-out 1 simulates n1 (critic 8 > 6): 1 of 2 tests, LLM 8, so Q = 0.5·10·0.5 + 0.5·8 = 6.5.
    Paper: V0 = critic until visited, then Q = the mean of the returns: n1's 6.5 beats n2's 6 (no exploration at
    N(root) = 1): n1 is expanded; with LLM 5, Q = 5 < 6: n2 is. Released (no KB, so V0 = critic as the released
    code keeps it): n1 = 0.5·8 + 0.5·6.5 = 7.25, while unvisited n2 scores 6 + 8: n2 is expanded."""
    script = Script(next=["Next step: Add one.", "Next step: Add two.", "Next step: Return x + 1.",
                          "Next step: Return 1 + x."],
                    critic=["<score>8</score>", "<score>6</score>", "<score>5</score>", "<score>5</score>"],
                    roll=["Step 1: Add one.\nStep 2: Check it.", "Step 1: x\nStep 2: Return x + 1."],
                    code=[code("2 if x == 1 else 0"), code("x + 1")],
                    evaluate=[f"<evaluation>{llm}</evaluation>", "<evaluation>10</evaluation>"],
                    locate=["<step_n>2</step_n> Check nothing, add one."])
    out = run(script, kb_path="", rpm_kb=False, rpm_filter=False, rpm_ldb=False, rpm_width=2, rpm_rollouts=2,
              rpm_selection=selection)
    nodes = out["nodes"]
    assert nodes["n1"]["value"] == pytest.approx(n1_value) and nodes["n1"]["visits"] == 1
    assert nodes["root"]["value"] == pytest.approx(n1_value) and nodes["root"]["visits"] == 1  # n2: no visits yet
    assert nodes["n2"]["value"] == 6.0 and nodes["n2"]["visits"] == 0
    assert {nodes[i]["parent"] for i in ("n3", "n4")} == {expanded_second}
    assert out["stop_reason"] == "solved" and out["cost"]["llm_calls"] == 8 + 7  # roll-out 1 with the locator


@pytest.mark.parametrize("selection, final", [("paper", "n2"), ("released", "n1")])
def test_at_the_budget_the_paper_implements_the_best_leaf_the_released_code_the_best_node(selection, final):
    """n1 (critic 10) rolls out to a failure, Q = 0.5·10·0.5 + 0.5·4 = 4.5, located at step 3: step 2 is grafted
    as n2 (V = 4.5, a leaf). Paper: n1's Q is 4.5 too, and n2 is the leaf ("the leaf node with the highest state
    value"). Released: n1 = 0.5·10 + 0.5·4.5 = 7.25, the highest V of any node, its path one step shorter."""
    script = Script(next=["Next step: Add one."], critic=["<score>10</score>"],
                    roll=["Step 1: Add one.\nStep 2: Keep it.\nStep 3: Return 0."],
                    code=[code("2 if x == 1 else 0"), code("x + 1")],
                    evaluate=["<evaluation>4</evaluation>"], locate=["<step_n>3</step_n> do not return 0"])
    out = run(script, kb_path="", rpm_kb=False, rpm_ldb=False, rpm_width=1, rpm_rollouts=1, rpm_selection=selection)
    assert out["nodes"]["n2"]["parent"] == "n1" and out["nodes"]["n2"]["text"] == "Keep it."
    assert out["final_node"] == final
    assert script.prompts["code"][-1].count("Keep it.") == (final == "n2")


@pytest.mark.parametrize("selection, n1, n3, final", [
    ("paper", (0.5 * (4.5 + 6.5), 2), (0.5 * (4.5 + 6.5), 2), "n3"),
    ("released", (0.5 * 10 + 0.5 * 6.5, 1), (4.5, 1), "n1")])
def test_a_rerollout_is_a_return_of_its_own_from_where_it_started(selection, n1, n3, final):
    """n1 (critic 10) rolls out: 1 of 2 tests, LLM 4, q1 = 4.5; step 3 is wrong, step 2 is grafted as n3 (4.5).
    The re-roll-out from n3 scores q2 = 0.5·5 + 0.5·8 = 6.5. Paper: both are returns, q1 backed up from n1 and q2
    from n3 (through n1): n1 and n3 both (4.5 + 6.5) / 2, and the best leaf is n3, not n2 (critic 5, never rolled
    out). Released: the re-roll-out's score is backed up from n1 alone, 0.5·10 + 0.5·6.5; its pick, n1."""
    script = Script(next=["Next step: Add one.", "Next step: Other."], critic=["<score>10</score>", "<score>5</score>"],
                    roll=["Step 1: Add one.\nStep 2: Keep it.\nStep 3: Return 0."],
                    reroll=["Step 1: Add one.\nStep 2: Keep it.\nStep 3: Return it."],
                    code=[code("2 if x == 1 else 0"), code("2 if x == 1 else 0"), code("x + 1")],
                    evaluate=["<evaluation>4</evaluation>", "<evaluation>8</evaluation>"],
                    locate=["<step_n>3</step_n> do not return 0"])
    out = run(script, "", rpm_kb=False, rpm_filter=False, rpm_ldb=False, rpm_width=2, rpm_rollouts=1,
              rpm_rerollout=True, rpm_selection=selection)
    nodes = out["nodes"]
    assert nodes["n3"]["parent"] == "n1" and nodes["n3"]["text"] == "Keep it."
    assert (nodes["n1"]["value"], nodes["n1"]["visits"]) == pytest.approx(n1)
    assert (nodes["n3"]["value"], nodes["n3"]["visits"]) == pytest.approx(n3)
    assert nodes["root"]["visits"] == n1[1] and nodes["n2"]["visits"] == 0
    assert out["final_node"] == final


def test_a_paper_mode_rerollout_can_replace_the_rollouts_return_as_released():
    """rpm_rerollout_return=replace under the paper's selection: one return per roll-out, the re-roll-out's
    q2 = 6.5 backed up from n1 (the mean of one return: 6.5, one visit); n3 keeps its graft value and visit (4.5, 1)."""
    script = Script(next=["Next step: Add one.", "Next step: Other."], critic=["<score>10</score>", "<score>5</score>"],
                    roll=["Step 1: Add one.\nStep 2: Keep it.\nStep 3: Return 0."],
                    reroll=["Step 1: Add one.\nStep 2: Keep it.\nStep 3: Return it."],
                    code=[code("2 if x == 1 else 0"), code("2 if x == 1 else 0"), code("x + 1")],
                    evaluate=["<evaluation>4</evaluation>", "<evaluation>8</evaluation>"],
                    locate=["<step_n>3</step_n> do not return 0"])
    out = run(script, "", rpm_kb=False, rpm_filter=False, rpm_ldb=False, rpm_width=2, rpm_rollouts=1,
              rpm_rerollout=True, rpm_rerollout_return="replace")
    nodes = out["nodes"]
    assert (nodes["n1"]["value"], nodes["n1"]["visits"]) == pytest.approx((6.5, 1))
    assert (nodes["n3"]["value"], nodes["n3"]["visits"]) == pytest.approx((4.5, 1)) and nodes["root"]["visits"] == 1


def test_as_printed_a_rollout_passing_with_a_doubtful_llm_is_only_valued_and_backed_up():
    """Alg. 1 revises a failing roll-out only: tests pass, the LLM says 7 < 9; no step is grafted, no reflection
    is left, the node holds the passing program for the final pick, and its value is 0.5·10 + 0.5·7."""
    script = Script(next=["Next step: Add one."], critic=["<score>6</score>"],
                    roll=["Step 1: Add one.\nStep 2: Return it."], code=[code("x + 1"), code("x + 1")],
                    evaluate=["Unsure about negatives.\n<evaluation>7</evaluation>"])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_rollouts=1)
    assert script.roles == ["next", "critic", "roll", "code", "evaluate", "code"]
    nodes = out["nodes"]
    assert set(nodes) == {"root", "n1"} and nodes["n1"]["passing"] and not nodes["n1"].get("reflection")
    assert nodes["n1"]["value"] == pytest.approx(0.5 * 10 + 0.5 * 7) and out["public_pass_rate"] == 1.0


def test_a_success_that_grafts_steps_sends_the_next_selection_down_them():
    """With min_candidates 2 the search goes on after a success; the released code marks the node above a graft
    expanded, so the next roll-out descends the passing chain instead of adding siblings to it."""
    script = Script(next=["Next step: Add one.", "Next step: Other."], critic=["<score>8</score>"] * 2,
                    roll=["Step 1: Add one.\nStep 2: Return it.", "Step 1: x\nStep 2: y\nStep 3: z"],
                    code=[code("x + 1"), code("1 + x"), code("x + 1")],
                    evaluate=["<evaluation>10</evaluation>", "<evaluation>10</evaluation>"])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_rollouts=2, min_candidates=2)
    nodes = out["nodes"]
    assert nodes["n2"]["parent"] == "n1" and nodes["n1"]["expanded"]
    assert nodes["n3"]["parent"] == "n2"


def test_without_the_execution_reward_the_llm_alone_decides():
    script = Script(next=["Next step: Add one."], critic=["<score>7</score>"], roll=["Step 1: Add one."],
                    code=[code("2 if x == 1 else 0")], evaluate=["Fine.\n<evaluation>9.5</evaluation>"])
    out = run(script, kb_path="", rpm_kb=False, rpm_exec_reward=False, rpm_width=1)
    assert "(not run)" in script.prompts["evaluate"][0] and "assert inc(5)" not in script.prompts["evaluate"][0].split(
        "Execute results")[1]
    assert out["stop_reason"] == "solved" and out["public_pass_rate"] == 0.5  # reported as it is
    assert out["nodes"]["n1"]["llm_score"] == 9.5


def test_without_the_execution_reward_a_failed_rollout_is_neither_located_nor_revised():
    script = Script(next=["Next step: Add one."], critic=["<score>7</score>"], roll=["Step 1: Add one."],
                    code=[code("x"), code("x + 1")], evaluate=["Unsure.\n<evaluation>3</evaluation>"])
    out = run(script, kb_path="", rpm_kb=False, rpm_exec_reward=False, rpm_width=1, rpm_rollouts=1,
              rpm_edit=True, rpm_rerollout=True)
    assert script.roles == ["next", "critic", "roll", "code", "evaluate", "code"]  # the released policy
    assert out["stop_reason"] == "budget_exhausted" and out["nodes"]["n1"]["value"] == 3.0  # the LLM's score


@pytest.mark.parametrize("reply, topic, held", [("I cannot tell.", None, 1), ("<topic>Other</topic>", "Other", 0)])
def test_an_unreadable_topic_searches_the_whole_kb_and_an_empty_topic_shows(kb_path, reply, topic, held):
    script = Script(topic=[reply], next=["Next step: Add one to the argument."], critic=["<score>7</score>"],
                    roll=["Step 1: Add one to the argument."], code=[code("x + 1")],
                    evaluate=["<evaluation>9</evaluation>"])
    out = run(script, kb_path, rpm_width=1)
    root, step = out["nodes"]["root"], out["nodes"]["n1"]
    assert root["topic"] == topic and root["kb_problems"] == held and (step["kb_reward"] > 0) == bool(held)


def test_a_failed_rollout_is_revised_node_edit_then_rerollout_with_the_reflection():
    """The located wrong step is the simulated one (step 1): the editor rewrites it, and the re-roll-out from the
    kept steps (the edited step) sees the wrong code and the reflection, passes, and ends the search."""
    script = Script(next=["Next step: Multiply x by one."], critic=["<score>6</score>"],
                    roll=["Step 1: Multiply x by one.\nStep 2: Return it."],
                    code=[code("x * 1"), code("x + 1")],
                    evaluate=["Wrong.\n<evaluation>1</evaluation>", "Right.\n<evaluation>9</evaluation>"],
                    locate=["<step_n>1</step_n> Multiplying by one changes nothing: add one."],
                    edit=["<edit>yes</edit>Step 1: Add one to x."],
                    reroll=["Step 1: Add one to x.\nStep 2: Return the sum."])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_ldb=False, rpm_edit=True, rpm_rerollout=True)
    assert script.roles == ["next", "critic", "roll", "code", "evaluate", "locate", "edit", "reroll", "code",
                            "evaluate"]
    nodes = out["nodes"]
    assert nodes["n1"]["text"] == "Add one to x." and nodes["n1"]["replaced_thought"] == "Multiply x by one."
    reroll = script.prompts["reroll"][0]
    assert "x * 1" in reroll and "x * 1\nWrong.\n" in reroll and "Step 1: Add one to x." in reroll
    assert "x * 1\nWrong.\n" in script.prompts["edit"][0]  # the evaluator's analysis, not the locator's
    assert out["stop_reason"] == "solved" and "x + 1" in out["final_code"]
    assert nodes[out["final_node"]]["parent"] == "n1" and nodes[out["final_node"]]["text"] == "Return the sum."


def test_a_failed_rerollout_leaves_the_reflection_on_the_path_and_the_search_goes_on():
    script = Script(next=["Next step: Return x.", "Next step: Add one."],
                    critic=["<score>6</score>", "<score>7</score>"],
                    roll=["Step 1: Return x.", "Step 1: Return x.\nStep 2: Add one.\nStep 3: Return."],
                    code=[code("x"), code("x"), code("x + 1")],
                    evaluate=["<evaluation>1</evaluation>", "Still no addition.\n<evaluation>1</evaluation>",
                              "<evaluation>9</evaluation>"],
                    locate=["<step_n>2</step_n> Remember to add one."], reroll=["Step 1: Return x."])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_rollouts=2, rpm_ldb=False, rpm_rerollout=True)
    assert script.roles == ["next", "critic", "roll", "code", "evaluate", "locate", "reroll", "code", "evaluate",
                            "next", "critic", "roll", "code", "evaluate"]
    # the evaluator gave no analysis with its score: the re-roll-out's reflection is the locator's
    assert "return x\nRemember to add one.\n" in script.prompts["reroll"][0]
    # the released reflection after a failed re-roll-out: its program, then the evaluator's analysis
    reflection = "def inc(x):\n    return x\nStill no addition."
    assert out["nodes"]["n1"]["reflection"] == reflection and out["stop_reason"] == "solved"
    assert reflection in script.prompts["next"][1]  # expansion 2 sees it


def doubted_then_rolled_again(third_step: str, body: str, verdict: str):
    """A two-step roll-out passing the tests that the LLM doubts (7 < 9), then the released re-roll-out, which
    adds ``third_step`` and implements it as ``body``, judged ``verdict``; one roll-out in all."""
    script = Script(next=["Next step: Add one."], critic=["<score>6</score>"],
                    roll=["Step 1: Add one.\nStep 2: Return it."],
                    reroll=[f"Step 1: Add one.\nStep 2: Return it.\n{third_step}"],
                    code=[code("x + 1"), code(body), code("x + 1")],
                    evaluate=["Unsure about negatives.\n<evaluation>7</evaluation>", verdict])
    return script, run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_rollouts=1, rpm_rerollout=True)


def test_a_rollout_passing_the_tests_with_a_doubtful_llm_is_kept_whole_and_rolled_out_again():
    """Tests pass but the LLM says 7 < 9: no error location; the whole roll-out is grafted and marked passing, the
    released re-roll-out sees the evaluator's doubt; it passes too (8 < 9), so its step is grafted and marked
    passing as well; at the budget's end the passing node of the higher value is the final pick."""
    script, out = doubted_then_rolled_again("Step 3: Check negative numbers.", "x + 1", "<evaluation>8</evaluation>")
    assert script.roles == ["next", "critic", "roll", "code", "evaluate", "reroll", "code", "evaluate", "code"]
    assert "Unsure about negatives." in script.prompts["reroll"][0] and "x + 1" in script.prompts["reroll"][0]
    nodes = out["nodes"]
    assert nodes["n2"]["text"] == "Return it." and nodes["n2"]["passing"] and nodes["n1"]["expanded"]
    assert nodes["n3"]["text"] == "Check negative numbers." and nodes["n3"]["passing"] and nodes["n2"]["expanded"]
    assert nodes["n3"]["value"] == 0.5 * 10 + 0.5 * 8 > nodes["n2"]["value"]
    assert out["final_node"] == "n3" and out["stop_reason"] == "budget_exhausted" and out["public_pass_rate"] == 1.0


def test_a_failed_rerollout_does_not_replace_the_passing_program_of_its_node():
    """The roll-out passes with a doubtful LLM and adds no step: its node holds the passing program; the
    re-roll-out from there fails, and the node keeps its own program (the released code keeps none of it)."""
    script = Script(next=["Next step: Add one."], critic=["<score>6</score>"], roll=["Step 1: Add one."],
                    reroll=["Step 1: Add one.\nStep 2: Return zero."], code=[code("x + 1"), code("0"), code("x + 1")],
                    evaluate=["<evaluation>7</evaluation>", "Returns zero.\n<evaluation>1</evaluation>"])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_rollouts=1, rpm_rerollout=True)
    assert script.roles == ["next", "critic", "roll", "code", "evaluate", "reroll", "code", "evaluate", "code"]
    n1 = out["nodes"]["n1"]
    assert n1["passing"] and "x + 1" in n1["code"] and n1["execution"]["passed"] == 2 and n1["llm_score"] == 7
    assert n1["reflection"] == "def inc(x):\n    return 0\nReturns zero." and set(out["nodes"]) == {"root", "n1"}
    assert out["final_node"] == "n1" and out["public_pass_rate"] == 1.0


def test_a_failed_rerollout_does_not_overwrite_a_grafted_passing_node():
    """The passing roll-out grafts its second step (n2, marked passing); the re-roll-out from n2 fails and
    leaves n2's record as it was (the roll-out's program stays on n1, where it was tested)."""
    _, out = doubted_then_rolled_again("Step 3: Return zero.", "0", "Returns zero.\n<evaluation>1</evaluation>")
    n1, n2 = out["nodes"]["n1"], out["nodes"]["n2"]
    assert n2["passing"] and "llm_score" not in n2 and "x + 1" in n2["final_code"]  # no re-roll-out record
    assert "x + 1" in n1["code"] and n1["execution"]["passed"] == 2 and n1["llm_score"] == 7
    assert out["final_node"] == "n2" and out["public_pass_rate"] == 1.0  # its path, implemented once more


def test_a_successful_rerollout_from_a_passing_node_is_a_candidate_program():
    """The re-roll-out from n2 (passing, so it keeps its record) succeeds: its program, which n2 could not take,
    is held on the grafted n3, so selectors and ``min_candidates`` see it."""
    from codeforest.graphs.selection import distinct_programs

    _, out = doubted_then_rolled_again("Step 3: Check negatives.", "x - -1", "<evaluation>10</evaluation>")
    assert out["stop_reason"] == "solved" and out["final_node"] == "n3" and "x - -1" in out["final_code"]
    n3 = out["nodes"]["n3"]
    assert "x - -1" in n3["code"] and n3["execution"]["passed"] == 2 and n3["llm_score"] == 10
    assert ["x - -1" in p["code"] for p in distinct_programs(out)] == [False, True]


def test_a_successful_rerollout_that_adds_no_step_is_its_node_s_program():
    """Nothing to graft: the node that kept its passing program takes the one the search returns, record and all."""
    from codeforest.graphs.selection import distinct_programs

    script = Script(next=["Next step: Add one."], critic=["<score>6</score>"], roll=["Step 1: Add one."],
                    reroll=["Step 1: Add one."], code=[code("x + 1"), code("x - -1")],
                    evaluate=["<evaluation>7</evaluation>", "<evaluation>10</evaluation>"])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_rollouts=1, rpm_rerollout=True)
    n1 = out["nodes"]["n1"]
    assert out["stop_reason"] == "solved" and out["final_node"] == "n1" and set(out["nodes"]) == {"root", "n1"}
    assert "x - -1" in n1["code"] == n1["final_code"] and n1["llm_score"] == 10
    assert any("x - -1" in p["code"] for p in distinct_programs(out))


def test_an_expansion_that_proposes_nothing_costs_a_rollout_and_the_next_one_samples_anew():
    script = Script(next=["", "Next step: Add one."], critic=["<score>8</score>"], roll=["Step 1: Add one."],
                    code=[code("x + 1")], evaluate=["<evaluation>10</evaluation>"])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_rollouts=2)
    assert script.roles == ["next", "next", "critic", "roll", "code", "evaluate"] and out["stop_reason"] == "solved"
    assert script.kwargs[0]["seed"] != script.kwargs[1]["seed"]


PATH = ["Step 1: Read x.", "Step 2: Add one."]


@pytest.mark.parametrize("reply, rolled, written", [
    ("Step 1: Read x.\nStep 2: Add one.\nStep 3: Return it.", ["Return it."],
     [*PATH, "Step 3: Return it."]),  # the path repeated, as asked
    ("Step 3: Return it.\nStep 4: Check it.", ["Return it.", "Check it."],
     [*PATH, "Step 3: Return it.", "Step 4: Check it."]),  # only the continuation: the code writer sees the path too
    ("Step 2: Add one.\nStep 3: Return it.", ["Return it."], [*PATH, "Step 3: Return it."]),  # the path's end repeated
    ("Step 1: Read x.\nStep 2: Add one.\nStep 1: Return it.", ["Return it."],
     [*PATH, "Step 3: Return it."]),  # numbered from 1 again
    ("Step 1: Read x as an int.\nStep 2: Add one with +.", [],
     ["Step 1: Read x as an int.", "Step 2: Add one with +."]),  # the path reworded: the code writer sees the words
    ("Nothing useful.", [], PATH),
])
def test_a_rollout_grafts_the_steps_after_the_path_and_shows_the_code_writer_its_whole_reply(reply, rolled, written):
    from codeforest.agents.thinker import full_steps
    from codeforest.prompts import load_prompt

    model = RespondingChatModel(respond=lambda messages: reply)
    out = full_steps(model, load_prompt("thinker_rpm"), "Add one to x.", steps=PATH)
    assert out.value.rolled == rolled and out.value.written == written and out.parsed == (reply != "Nothing useful.")


def test_the_locator_reads_the_step_number_the_1_5b_model_writes_in_the_tag_name():
    """Every cached 1.5B locator reply looks like '<step_3>x</step_3>': step 3 is wrong, so steps 1-2 are kept."""
    script = Script(next=["Next step: Add one to the argument."], critic=["<score>7</score>"],
                    roll=["Step 1: Add one to the argument.\nStep 2: Add one more.\nStep 3: Return it."],
                    code=[code("x + 2"), code("x + 1")], evaluate=["Off by one.\n<evaluation>2</evaluation>"],
                    locate=["<step_3>x</step_3> Step 3 must not add again."])
    out = run(script, "", rpm_kb=False, rpm_width=1, rpm_rollouts=1, rpm_ldb=False)
    assert [n["text"] for n in out["nodes"].values() if n.get("grafted")] == ["Add one more."]
    assert out["cost"].get("parse_failures", 0) == 0


def test_a_locator_naming_the_simulated_step_in_the_tag_name_reaches_the_node_editor():
    script = Script(next=["Next step: Add two to the argument."], critic=["<score>7</score>"],
                    roll=["Step 1: Add two to the argument.\nStep 2: Return it."],
                    code=[code("x + 2"), code("x + 1"), code("x + 1")],
                    evaluate=["<evaluation>2</evaluation>", "<evaluation>10</evaluation>"],
                    locate=["<step_1>x</step_1> Adding two is wrong."],
                    edit=["<edit>yes</edit>Step 1: Add one to the argument."],
                    reroll=["Step 1: Add one to the argument.\nStep 2: Return it."])
    run(script, "", rpm_kb=False, rpm_width=1, rpm_rollouts=1, rpm_ldb=False, rpm_edit=True, rpm_rerollout=True)
    assert "edit" in script.roles


def test_the_code_writer_sees_the_rollers_own_words_when_it_rewrites_the_path():
    """22 of 51 cached roll-outs rewrote the path as Step 1..n: the released code implements the whole reply."""
    script = Script(next=["Next step: Add one."], critic=["<score>7</score>"],
                    roll=["Step 1: Add one, using integer addition x + 1, and return the sum."],
                    code=[code("x + 1")], evaluate=["<evaluation>10</evaluation>"])
    run(script, "", rpm_kb=False, rpm_width=1)
    assert "integer addition" in script.prompts["code"][0]


@pytest.mark.parametrize("reply, number, analysis", [
    ("<step_n>2</step_n> Step 2 adds twice.", 2, "Step 2 adds twice."),
    ("<step_n>Step 3</step_n> Off by one.", 3, "Off by one."),
    ("<step_3>x</step_3> Off by one.", 3, "Off by one."),
    ("<step_3>\nThe loop stops early.", 3, "The loop stops early."),  # unclosed: the analysis stays
    ("<step_n>7</step_n> No such step.", 4, "No such step."),  # out of range: the fallback
])
def test_the_locator_reads_the_wrong_step_and_keeps_the_analysis(reply, number, analysis):
    from codeforest.agents.critic import locate_error
    from codeforest.prompts import load_prompt

    model = RespondingChatModel(respond=lambda messages: reply)
    out = locate_error(model, load_prompt("critic_rpm"), "p", steps=["a", "b", "c", "d", "e"], code="", debug="",
                       fallback=4)
    assert (out.value, out.analysis, out.parsed) == (number, analysis, number != 4)


@pytest.mark.parametrize("settings, temperature, seed", [
    ({}, None, None),  # the model's own temperature: the context's, 0
    ({"temperature": 0.4}, 0.0, 0),  # greedy whatever the search's temperature
    ({"rpm_topic_temperature": 0.7}, 0.7, 0)])
def test_the_topic_call_is_greedy_or_sampled_at_the_released_temperature(kb_path, settings, temperature, seed):
    script = Script(topic=["<topic>Math</topic>"], next=["Next step: Add one to the argument."],
                    critic=["<score>7</score>"], roll=["Step 1: Add one to the argument."], code=[code("x + 1")],
                    evaluate=["<evaluation>9</evaluation>"])
    model = RespondingChatModel(respond=lambda messages, **kwargs: script(messages), pass_kwargs=True)
    context = RpmContext(kb_path=kb_path, structured_output=False, rpm_width=1, **settings)
    build_graph(model=model).invoke({"problem": PROBLEM}, context=context)
    assert len(script.prompts["topic"]) == 1  # the first call of the search, before any step
    assert (model.call_kwargs[0].get("temperature"), model.call_kwargs[0].get("seed")) == (temperature, seed)
    assert RpmContext().temperature == 0.0


def test_the_released_final_pick_walks_the_tree_depth_first():
    """Released: the first passing node of the highest value in depth-first order (n3: n1's subtree comes before
    n2, made after n1), else the last node of the highest value. Paper: of tied passing nodes the one made first
    (n2)."""
    def node(i, parent, order, value, passing=False):
        return {"id": i, "parent": parent, "order": order, "value": value, "passing": passing}

    nodes = {"root": {"id": "root", "parent": None, "order": 0, "value": 0.0},
             "n1": node("n1", "root", 1, 6.0), "n2": node("n2", "root", 2, 8.5, True),
             "n3": node("n3", "n1", 3, 8.5, True), "n4": node("n4", "n2", 4, 9.0)}
    assert final_choice(nodes, "released") == "n3" and final_choice(nodes, "paper") == "n2"
    for n in ("n2", "n3"):
        nodes[n]["passing"] = False
    assert final_choice(nodes, "released") == "n4"
    nodes["n1"]["value"] = 9.0  # a tie at 9.0: the released getBestV takes the last in depth-first order
    assert final_choice(nodes, "released") == "n4" and final_choice(nodes, "paper") == "n4"


def test_the_released_layout_and_step_extractor_write_the_prompts_as_released():
    """rpm_layout=released: the path as the released node text ('None' before any step, a line break before each
    step and after a proposed one), earlier proposals as 'History i:' lines; rpm_extract_steps: one more call after
    the roll-out, whose answer the code writer implements and whose steps are grafted."""
    script = Script(next=["Next step: Add one.", "Next step: Add two."],
                    critic=["<score>8</score>", "<score>3</score>"], roll=["Step 1: Add one.\nStep 2: Return it."],
                    extract=["<step>Step 1: Add one.</step>\n<step>Step 2: Return the sum.</step>"],
                    code=[code("x + 1")], evaluate=["<evaluation>10</evaluation>"])
    out = run(script, "", rpm_kb=False, rpm_filter=False, rpm_width=2, rpm_rollouts=1, rpm_layout="released",
              rpm_extract_steps=True)
    assert script.roles == ["next", "next", "critic", "critic", "roll", "extract", "code", "evaluate"]
    first, second = script.prompts["next"]
    assert first.endswith("Existing steps:\nNone\n\nAnalysis:\nNone\n\nSteps already proposed for this position:\n")
    assert second.endswith("Steps already proposed for this position:\nHistory 0: Step 1: Add one.\n.\n")
    assert script.prompts["roll"][0].endswith("Existing steps:\n\nStep 1: Add one.\n")
    assert "Existing Steps:\nStep 1: Add one.\nScore:" in script.prompts["critic"][0]  # the child's text, stripped
    assert "Complete answer:Step 1: Add one.\nStep 2: Return it." in script.prompts["extract"][0]
    assert "<step>Step 2: Return the sum.</step>" in script.prompts["code"][0]
    assert [n["text"] for n in out["nodes"].values() if n.get("grafted")] == ["Return the sum."]


@pytest.mark.parametrize("layout, shown", [("released", "Problem:\ndef inc(x):"),
                                           ("codeforest", "Problem:\n\ndef inc(x):")])
def test_the_released_step_critic_reads_the_problem_stripped(layout, shown):
    """The released critic formats the problem stripped (``x.strip()``); every other prompt shows it as it is. A
    HumanEval prompt can start with a line break (HumanEval/159 does)."""
    problem = {**PROBLEM, "prompt": "\n" + PROBLEM["prompt"]}
    script = Script(next=["Next step: Add one."], critic=["<score>8</score>"], roll=["Step 1: Add one."],
                    code=[code("x + 1")], evaluate=["<evaluation>10</evaluation>"])
    run(script, "", problem=problem, rpm_kb=False, rpm_filter=False, rpm_width=1, rpm_rollouts=1, rpm_layout=layout)
    assert shown in script.prompts["critic"][0]
    assert "\n\ndef inc(x):" in script.prompts["next"][0]


def test_the_released_layout_reads_each_proposal_as_the_released_code_does():
    """rpm_layout=released: a proposal keeps its line breaks (in the next 'History i:' block, the child's text and
    the roll-out's path); an unreadable one is a blank history entry and a child with no step; a '1.' numbering
    is dropped with the rest of its line, as the released regex does."""
    script = Script(next=["Next step: **Read n.**\n\nThen count it.", "No idea.", "Step 1: 1. Add one.\nStep 2: Go."],
                    critic=["<score>8</score>", "<score>3</score>", "<score>5</score>"],
                    roll=["Step 1: Read n.\nStep 2: Return it."],
                    code=[code("x + 1")], evaluate=["<evaluation>10</evaluation>"])
    out = run(script, "", rpm_kb=False, rpm_filter=False, rpm_width=3, rpm_rollouts=1, rpm_layout="released")
    assert script.roles == ["next"] * 3 + ["critic"] * 3 + ["roll", "code", "evaluate"]
    assert script.prompts["next"][2].endswith("History 0: Step 1: **Read n.**\n\nThen count it.\n.\nHistory 1: .\n")
    assert "Existing Steps:\nStep 1: **Read n.**\n\nThen count it.\nScore:" in script.prompts["critic"][0]
    assert "Existing Steps:\n\nScore:" in script.prompts["critic"][1]  # the blank child: no step at all
    assert "Existing Steps:\nStep 1: Add one.\nScore:" in script.prompts["critic"][2]
    assert script.prompts["roll"][0].endswith("Existing steps:\n\nStep 1: **Read n.**\n\nThen count it.\n")
    texts = [n["text"] for n in out["nodes"].values() if n.get("kind") == "step" and not n.get("grafted")]
    assert texts == ["**Read n.**\n\nThen count it.", "", "Add one."]


def test_the_released_proposal_parse():
    """released_proposal: the released extract_proposal's English branch on hand-made replies."""
    from agents.thinker import released_proposal
    assert released_proposal("Next step: Sort.\n<code>a.sort()</code> tail", "") == "Sort.\n<code>\na.sort()\n</code>"
    assert released_proposal("Next step Sort.", "") == ""  # no colon right after: nothing read, as released
    assert released_proposal("Analysis: count them\n", "") == "count them"
    assert released_proposal("Next step: Sort.", "\nStep 1: Sort.\n") == ""  # already on the path
    assert released_proposal("Next step: Sort.\n<code>x</code>", "Sort.") == "Sort.\n<code>\nx\n</code>"
    assert released_proposal("Step 3: 2. Loop.\nAnd more.", "") == "Loop."


def test_the_extractors_steps_are_grafted_by_position_and_shown_as_written():
    """rpm_extract_steps under the released layout: the tags past the path are the rolled ones whatever they are
    labelled, and a grafted step is its tag as written in the next path shown (the re-roll-out's)."""
    script = Script(next=["Next step: Multiply x by one."], critic=["<score>6</score>"],
                    roll=["Step 1: Multiply x by one.\nStep 2: Keep it.\nStep 3: Return it."],
                    extract=["<step>Step 1: Multiply x by one.</step><step>2) Keep\n  it.</step>"
                             "<step>Step 3: Return it.</step>", "<step>Step 1: Add one.</step>"],
                    code=[code("x * 1"), code("x + 1")],
                    evaluate=["Wrong.\n<evaluation>1</evaluation>", "Right.\n<evaluation>9</evaluation>"],
                    locate=["<step_n>3</step_n> Add one."], reroll=["Step 1: Add one."])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_ldb=False, rpm_rerollout=True,
              rpm_layout="released", rpm_extract_steps=True)
    assert script.roles == ["next", "critic", "roll", "extract", "code", "evaluate", "locate", "reroll", "extract",
                            "code", "evaluate"]
    grafted = [n for n in out["nodes"].values() if n.get("grafted")]
    assert [(n["text"], n["action"]) for n in grafted][0] == ("2) Keep it.", "2) Keep\n  it.")
    assert script.prompts["reroll"][0].endswith("Existing steps:\n\nStep 1: Multiply x by one.\n\n2) Keep\n  it.")


def test_the_released_locator_reading():
    """rpm_layout=released reads only a whole number in <step_n>, in range or not; the fallback is the first rolled
    step's 0-based index (the last index when none was rolled)."""
    from codeforest.agents.critic import locate_error
    from codeforest.graphs.rpm_mcts import released_fallback
    from codeforest.prompts import load_prompt

    prompt = load_prompt("critic_rpm")
    def located(reply, released=True):
        model = RespondingChatModel(respond=lambda messages: reply)
        return locate_error(model, prompt, "p", steps=["a", "b"], code="c", debug="d", fallback=7,
                            released=released).value
    assert [located("<step_n> 9 </step_n>"), located("<step_2>x</step_2>"), located("<step_n>step 1</step_n>")] \
        == [9, 7, 7]
    assert [located("<step_n> 9 </step_n>", False), located("<step_2>x</step_2>", False)] == [7, 2]
    assert [released_fallback(5, 2), released_fallback(2, 2), released_fallback(0, 0)] == [2, 1, -1]


def test_the_released_layout_keeps_the_line_break_of_a_reflection_without_analysis():
    """After a failed re-roll-out whose evaluator wrote only its score, the released reflection is the program and a
    line break (program + '\\n' + an empty analysis), which the next expansion shows as is."""
    script = Script(next=["Next step: Return x.", "Next step: Add one."],
                    critic=["<score>6</score>", "<score>7</score>"],
                    roll=["Step 1: Return x.", "Step 1: Return x.\nStep 2: Add one.\nStep 3: Return."],
                    code=[code("x"), code("x"), code("x + 1")],
                    evaluate=["<evaluation>1</evaluation>"] * 2 + ["<evaluation>9</evaluation>"],
                    locate=["<step_n>2</step_n> Remember to add one."], reroll=["Step 1: Return x."])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_rollouts=2, rpm_ldb=False, rpm_rerollout=True,
              rpm_layout="released")
    reflection = "def inc(x):\n    return x\n"
    assert out["nodes"]["n1"]["reflection"] == reflection
    assert f"Analysis:\n{reflection}\n" in script.prompts["next"][1]  # the packaged template's own line break after it


def test_the_released_topic_and_program_readings():
    """The released code reads the topic of the first closed <topic> tag as written (its KB filters on that exact
    text; none: the whole KB) and the program of the first closed ```python block, stripped, nothing added."""
    from codeforest.agents.base import released_python_code
    from codeforest.agents.thinker import parse_topic, released_topic
    from codeforest.tools.released_exec import IMPORTS, with_imports

    said = "I think <topic> data structures </topic>, or <topic>Graph Theory</topic>"
    assert released_topic(said) == "data structures" and parse_topic(said) == "Data Structures"
    assert released_topic("<topic>Graph Theory") is None and parse_topic("<topic>Graph Theory") == "Graph Theory"
    assert released_topic("<topic> </topic>") is None
    reply = "Use this:\n```python\n  x = 1\n```\nand a check\n```python\nprint(x)\n```"
    assert released_python_code(reply) == "x = 1"
    assert released_python_code("```py\nx = 1\n```") is None and released_python_code("```python\nx = 1") is None
    assert with_imports("x = 1").splitlines() == [*IMPORTS, "x = 1"] and len(IMPORTS) == 16


def test_under_the_released_executor_a_program_is_judged_after_its_import_lines():
    """A program calling math without importing it passes as the released executor runs it (its import lines
    first) and fails as written; the node keeps the program as written, the first block of the reply."""
    uses_math = "```python\ndef inc(x):\n    return math.floor(x) + 1\n```\n```python\nprint(inc(1))\n```"

    def once(**settings):
        script = Script(next=["Next step: Add one."], critic=["<score>8</score>"], roll=["Step 1: Add one."],
                        code=[uses_math] * 2, evaluate=["<evaluation>10</evaluation>"],
                        locate=["<step_n>1</step_n> Import math."])
        return run(script, "", rpm_kb=False, rpm_filter=False, rpm_width=1, rpm_rollouts=1, rpm_ldb=False,
                   **settings)

    released = once(rpm_layout="released", rpm_results_text="released")
    assert released["stop_reason"] == "solved" and released["public_pass_rate"] == 1.0
    assert released["final_code"] == "def inc(x):\n    return math.floor(x) + 1"
    as_written = once(rpm_layout="released")  # codeforest runs the program as written: NameError
    assert as_written["stop_reason"] != "solved" and as_written["public_pass_rate"] == 0.0


def test_a_path_text_valued_before_is_not_valued_again_under_the_released_layout():
    """The released step values are cached by the path's text: a new child whose text a node was valued with earlier
    in the run (after a node edit, two nodes can hold the same path) takes that value without a critic call;
    codeforest's layout asks the critic again."""
    from langgraph.runtime import Runtime

    from codeforest.graphs.rpm_mcts import expand

    nodes = {"root": {"id": "root", "parent": None, "order": 0, "visits": 2, "value": 5.0, "expanded": True},
             "n1": {"id": "n1", "parent": "root", "order": 1, "kind": "step", "text": "B", "visits": 1, "value": 5.0},
             "n2": {"id": "n2", "parent": "root", "order": 2, "kind": "step", "text": "B", "visits": 1, "value": 5.0,
                    "expanded": True},
             "n3": {"id": "n3", "parent": "n2", "order": 3, "kind": "step", "text": "C", "visits": 0, "value": 7.0,
                    "step_score": 7.0, "kb_reward": 0.0, "scored_text": "\nStep 1: B\n\nStep 2: C\n"}}
    state = {"problem": PROBLEM, "nodes": nodes, "path": ["root", "n1"], "rollouts": 1, "topic": None}

    def expanded(layout):
        script = Script(next=["Next step: C"], critic=["<score>2</score>"])
        context = RpmContext(rpm_kb=False, rpm_filter=False, rpm_width=1, rpm_layout=layout, structured_output=False)
        out = expand(state, Runtime(context=context), model=RespondingChatModel(respond=script, pass_kwargs=True))
        (child,) = (out["nodes"][n] for n in out["new_steps"])
        return script.roles, child

    roles, child = expanded("released")
    assert roles == ["next"] and (child["step_score"], child["value"]) == (7.0, 7.0)
    assert child["scored_text"] == "\nStep 1: B\n\nStep 2: C\n"
    roles, child = expanded("codeforest")
    assert roles == ["next", "critic"] and child["step_score"] == 2.0


@pytest.mark.parametrize("layout", ["codeforest", "released"])
def test_the_released_layout_passes_an_empty_analysis_as_is_and_keeps_the_edited_step_as_written(layout):
    """The evaluator wrote only its score: the released locator sees that empty analysis (codeforest: the test
    feedback instead), and the editor's step joins the path as the released code keeps it, label and line breaks as
    written (codeforest: one line, relabelled)."""
    script = Script(next=["Next step: Multiply x by one."], critic=["<score>6</score>"],
                    roll=["Step 1: Multiply x by one.\nStep 2: Return it."],
                    code=[code("x * 1"), code("x + 1")],
                    evaluate=["<evaluation>1</evaluation>", "Right.\n<evaluation>9</evaluation>"],
                    locate=["<step_n>1</step_n> Add one."],
                    edit=["<edit>yes</edit>Step 1:  Add one\nto x."],
                    reroll=["Step 1: Add one to x.\nStep 2: Return the sum."])
    out = run(script, kb_path="", rpm_kb=False, rpm_width=1, rpm_ldb=False, rpm_edit=True, rpm_rerollout=True,
              rpm_layout=layout)
    assert script.roles == ["next", "critic", "roll", "code", "evaluate", "locate", "edit", "reroll", "code",
                            "evaluate"]
    assert out["nodes"]["n1"]["text"] == "Add one to x."
    debug = script.prompts["locate"][0].split("Test case debug information:\n")[1].split("\n\nThe above")[0]
    assert (debug == "") == (layout == "released") and ("assert inc(1) == 2" in debug) == (layout == "codeforest")
    assert ("Step 1:  Add one\nto x." in script.prompts["reroll"][0]) == (layout == "released")


def test_the_released_editor_reads_yes_as_written():
    """Released: an edit only when 'yes' is in the first <edit> tag's text as written ('Yes' is not), the step the
    rest of the reply stripped, an empty one kept; codeforest reads either case and needs a step."""
    from codeforest.agents.thinker import edit_step
    from codeforest.prompts import load_prompt

    prompt = load_prompt("thinker_rpm")
    def edited(reply, released=True):
        model = RespondingChatModel(respond=lambda messages: reply)
        return edit_step(model, prompt, "p", steps=["Step 1: a"], wrong="w", released=released).value
    assert [edited("<edit>Yes</edit>Step 1: b"), edited("So <edit> yes </edit> Step 1: b\n"),
            edited("<edit>yes</edit>")] == [None, "So  Step 1: b", ""]
    assert [edited("<edit>Yes</edit>Step 1: b", False), edited("<edit>yes</edit>", False)] == ["b", None]


def test_a_reply_with_an_unclosed_python_block_runs_as_the_released_executor_reads_it():
    """The released RPM-MCTS keeps a reply whose ```python block is never closed whole; its executor runs the text
    after the fence, which passes here. codeforest's own layout runs the reply as it is: a syntax error."""
    from codeforest.graphs.rpm_mcts import RpmContext, _run

    problem = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
               "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}
    reply = "```python\ndef inc(x):\n    return x + 1"
    released, _ = _run(problem, reply, RpmContext(rpm_results_text="released"), "n1")
    own, tested = _run(problem, reply, RpmContext(), "n1")
    assert (released.passed, own.passed) == (2, 0) and tested["code"] == reply
