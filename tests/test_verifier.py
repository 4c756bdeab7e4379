"""The Verifier: score parsing, CodePRM's input and feedback strings, the HTTP PRM against a local server,
and the Verifier plugged into CodeTree and RethinkMCTS."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from codeforest.agents.verifier import LLMVerifier, numbered, parse_scores, verify
from codeforest.graphs import codetree, gvr, rethink_mcts
from codeforest.prompts import load_prompt
from codeforest.suites import ExecutionResult, TestOutcome
from codeforest.tools.prm import STEP_TAG, HTTPScorer, PRMError, PRMReplyError, PRMScorer, prm_input
from codeforest.tools.testing import prm_feedback
from tests.fakes import RespondingChatModel

PROBLEM = {"id": "T/inc", "prompt": 'def inc(x):\n    """Return x plus one."""\n', "kind": "function",
           "entry_point": "inc", "public_tests": ["assert inc(1) == 2", "assert inc(5) == 6"]}


def test_scores_are_read_as_the_released_code_reads_them():
    assert parse_scores('```json\n{"1-Thought": 0.3, "2-Thought": 0.8,\n}\n```', 2) == [0.3, 0.8]
    assert parse_scores("1-Thought: 0.4\n2-Thought: 1.0\n3-Thought: 0.2", 2) == [0.4, 1.0]  # extra cut
    assert parse_scores('{"1-Thought": 1.7, "2-Thought": -1}', 2) == [1.0, 0.0]  # clamped
    assert parse_scores('{"1-Thought": 0.3}', 2) is None and parse_scores("no idea", 1) is None
    # a JSON list is read by its numbers, as the released code's fallback does
    assert parse_scores('[{"1-Thought": 0.3}, {"2-Thought": 0.8}]', 2) == [0.3, 0.8]
    assert numbered(["a", " b "]) == "\n1-Thought: a\n2-Thought: b"


def test_prm_input_is_codeprms_exact_string():
    # each thought numbered as the released collector labels it (a label it already has is not doubled)
    text = prm_input("Q", ["t1", "2-Thought: t2"], "code", "fb")
    assert text == f"Q \n1-Thought: t1\n2-Thought: t2\n \ncode \nfb \n1-Thought: t1 {STEP_TAG}2-Thought: t2 {STEP_TAG}"
    assert prm_input("Q", ["t1"]) == f"Q \n1-Thought: t1 {STEP_TAG}"  # the math-style input
    # blank lines in the feedback (a program's output), the code or a thought never make another step tag
    blank = "\n" * 7
    text = prm_input(f"Q{blank}end", [f"t1{blank}more", "t2"], f"x = 1{blank}y = 2", f"out:{blank}")
    assert text.count(STEP_TAG) == 2 and text.endswith(f"2-Thought: t2 {STEP_TAG}") and "t1\n\n\nmore" in text


def test_prm_feedback_format():
    stdio = ExecutionResult(0, 1, [TestOutcome("1 2\n", False, expected="3\n", actual="4\n", reason="wrong answer")])
    assert prm_feedback(stdio) == "## Failed test 1: \n\n# Input:\n1 2\n\n# Ground Truth Output:\n3\n\n\n" \
                                  "# Current Execution Output:\n4"
    many = ExecutionResult(0, 7, [TestOutcome(f"assert f({i}) == 0", False, error="AssertionError") for i in range(7)])
    text = prm_feedback(many)
    assert text.count("## Failed test") == 5 and "## Failed test 5: \n\nassert f(4) == 0" in text
    long = ExecutionResult(0, 2, [TestOutcome("assert f(1) == 0", False, actual="x" * 5000),
                                  TestOutcome("assert f(2) == 0", False, actual="y")])
    assert "f(1)" not in prm_feedback(long) and "## Failed test 1: \n\nassert f(2) == 0" in prm_feedback(long)
    assert prm_feedback(ExecutionResult(2, 2, [])) == "All public test cases passed!"
    # a returned string as the released executor prints it: without quotes
    word = ExecutionResult(0, 1, [TestOutcome("assert f(1) == 'b'", False, actual="'a'", reason="wrong answer")])
    assert prm_feedback(word).endswith("# Current Execution Output:\na")


class PRMServer:
    """A PRM behind HTTP on 127.0.0.1: answers with ``reply(body)`` (a status and a payload); records bodies."""

    def __init__(self, reply):
        self.bodies: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                status, payload = reply(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/score"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture
def prm_server():
    servers = []

    def start(reply):
        servers.append(PRMServer(reply))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_http_scorer_sends_the_documented_request(prm_server):
    server = prm_server(lambda body: (200, {"scores": [0.25] * len(body["thoughts"])}))
    scorer = HTTPScorer(server.url)
    assert isinstance(scorer, PRMScorer)
    assert scorer.score("Q", ["t1", "t2"], "code", "fb") == [0.25, 0.25]
    body = server.bodies[0]
    assert body["input"] == prm_input("Q", ["t1", "t2"], "code", "fb") and body["step_tag"] == STEP_TAG
    assert (body["problem"], body["thoughts"], body["code"], body["feedback"]) == ("Q", ["t1", "t2"], "code", "fb")
    math_style = HTTPScorer(server.url, with_execution=False)
    math_style.score("Q", ["t1"], "code", "fb")
    assert server.bodies[-1]["input"] == prm_input("Q", ["t1"])
    assert (server.bodies[-1]["code"], server.bodies[-1]["feedback"]) == ("", "")


def test_http_scorer_retries_server_errors_and_rejects_bad_answers(prm_server):
    answers = iter([(503, {}), (200, {"scores": [0.9]})])
    server = prm_server(lambda body: next(answers))
    assert HTTPScorer(server.url, retries=1).score("Q", ["t"], "c", "f") == [0.9] and len(server.bodies) == 2
    broken = prm_server(lambda body: (500, {}))
    with pytest.raises(PRMError, match="failed after 2 attempts"):
        HTTPScorer(broken.url, retries=1).score("Q", ["t"], "c", "f")
    short = prm_server(lambda body: (200, {"scores": [0.1]}))
    with pytest.raises(PRMReplyError, match="2 numbers"):
        HTTPScorer(short.url).score("Q", ["t1", "t2"], "c", "f")
    # in a search, a reply of the wrong length is unreadable (0.5 a thought, counted), not a failed endpoint
    unread = verify(HTTPScorer(short.url), "Q", ["t1", "t2"], "c", "f")
    assert unread.value == [0.5, 0.5] and not unread.parsed and "2 numbers" in unread.raw
    with pytest.raises(ValueError, match="verifier_url"):
        HTTPScorer("")


def test_http_scorer_retries_a_rate_limit_not_a_refusal_and_clamps_scores(prm_server):
    answers = iter([(429, {}), (200, {"scores": [1.5, -0.2]})])
    limited = prm_server(lambda body: next(answers))
    assert HTTPScorer(limited.url, retries=1).score("Q", ["a", "b"], "c", "f") == [1.0, 0.0]
    assert len(limited.bodies) == 2
    refusing = prm_server(lambda body: (422, {}))
    with_credentials = refusing.url.replace("http://", "http://prm-user:prm-pass@")
    with pytest.raises(PRMError, match=r"at http://\*\*\*@127.0.0.1:\d+/score refused the request: HTTP 422"):
        HTTPScorer(with_credentials, retries=2).score("Q", ["t"], "c", "f")
    assert len(refusing.bodies) == 1
    words = prm_server(lambda body: (200, {"scores": ["high"]}))
    with pytest.raises(PRMReplyError, match="non-numeric"):
        HTTPScorer(words.url).score("Q", ["t"], "c", "f")


def test_gvr_with_a_prm_endpoint(prm_server):
    server = prm_server(lambda body: (200, {"scores": [0.1] * len(body["thoughts"])}))

    def respond(messages):
        text = "\n".join(str(m.content) for m in messages)
        if "Revise and enhance the" in text:
            return "Add one to x."
        if "Reasonableness" in text:
            return json.dumps([{"Thought-1": "Return x + 2.", "Reasonableness": 1.0}])
        return "```python\ndef inc(x):\n    return x + 2\n```"

    context = gvr.GvrContext(structured_output=False, gvr_width=1, gvr_rollouts=1, verifier="http",
                             verifier_url=server.url)
    out = gvr.build_graph(model=RespondingChatModel(respond=respond)).invoke({"problem": PROBLEM}, context=context)
    assert out["cost"]["prm_calls"] == 1 and out["nodes"]["n1"]["prm_history"] == [[0.1]]
    assert out["nodes"]["n1"]["text"] == "Add one to x." and "## Failed test 1" in server.bodies[0]["feedback"]


def test_gvr_ends_with_model_error_when_the_prm_endpoint_is_down(prm_server):
    server = prm_server(lambda body: (500, {}))
    model = RespondingChatModel(respond=lambda m: json.dumps([{"Thought-1": "x", "Reasonableness": 1.0}])
                                if "Reasonableness" in m[-1].content else "```python\ndef inc(x):\n    return x\n```")
    context = gvr.GvrContext(structured_output=False, gvr_width=1, gvr_rollouts=2, verifier="http",
                             verifier_url=server.url, retries=0)
    out = gvr.build_graph(model=model).invoke({"problem": PROBLEM}, context=context)
    assert out["stop_reason"] == "model_error" and "verifier" in out["error"]
    assert out["final_code"].endswith("return x") and out["cost"]["prm_calls"] == 1


def test_llm_verifier_is_a_scorer_and_counts_its_call():
    model = RespondingChatModel(respond=lambda m: '{"1-Thought": 0.6}')
    verifier = LLMVerifier(model, load_prompt("verifier"))
    assert isinstance(verifier, PRMScorer) and verifier.score("Q", ["t"], "c", "f") == [0.6]
    reply = verify(verifier, "Q", ["t"], "c", "f")
    assert reply.value == [0.6] and reply.cost["llm_calls"] == 1


# --- the Verifier inside CodeTree and RethinkMCTS -----------------------------------------------------

def codetree_script(scores):
    scores = list(scores)

    def respond(messages):
        text = "\n".join(str(m.content) for m in messages)
        if "judge the correctness of each thought" in text:
            return scores.pop(0)
        if "provides strategies" in text:
            return "1. Add one to the argument."
        if "Reflect on the implementation" in text:
            return "1. Add one, not two."
        if "past function implementation" in text:
            return "```python\ndef inc(x):\n    return x + 1\n```"
        assert "code reviewer" not in text and "Score from 0 to 5" not in text, "the Critic is replaced"
        return "```python\ndef inc(x):\n    return x + 2\n```"

    return respond


def test_codetree_with_the_verifier_as_its_critic():
    # n1 fails: mean step score 0.5 -> critic score round(2.5) = 2 (banker's rounding), value 0 + 2/15; its
    # reflection n2 passes and the Verifier flags nothing (0.9, 0.7 >= 0.5): accepted
    respond, seen = codetree_script(['{"1-Thought": 0.5}', '{"1-Thought": 0.9, "2-Thought": 0.7}']), []
    context = codetree.CodeTreeContext(structured_output=False, codetree_evaluator="verifier")
    out = codetree.build_graph(model=RespondingChatModel(respond=lambda m: seen.append(m) or respond(m))).invoke(
        {"problem": PROBLEM}, context=context)
    nodes = out["nodes"]
    verified = [str(m[-1].content) for m in seen if "judge the correctness" in str(m[-1].content)]
    assert "## Failed test 1:" in verified[0] and "Tests failed:" not in verified[0]  # CodePRM's feedback format
    assert nodes["n1"]["critic_score"] == 2 and nodes["n1"]["value"] == pytest.approx(2 / 15)
    assert nodes["n2"]["critic_verdict"] is True and out["stop_reason"] == "accepted"


def test_codetree_verifier_rejects_a_visible_pass_with_a_flagged_step():
    respond = codetree_script(['{"1-Thought": 1.0}', '{"1-Thought": 0.9, "2-Thought": 0.2}'])
    context = codetree.CodeTreeContext(structured_output=False, codetree_evaluator="verifier",
                                       codetree_max_programs=2)
    out = codetree.build_graph(model=RespondingChatModel(respond=respond)).invoke({"problem": PROBLEM},
                                                                                  context=context)
    assert out["nodes"]["n2"]["critic_verdict"] is False and "2-Thought 0.20" in out["nodes"]["n2"]["feedback"]
    assert out["stop_reason"] == "budget_exhausted"


@pytest.mark.parametrize("rule", ["le", "lt"])
def test_codetree_accepts_a_visible_pass_the_verifier_could_not_score(rule):
    # an unreadable reply is recorded as 0.5 a thought: under the paper's <= 0.5 that would flag every thought
    respond = codetree_script(['{"1-Thought": 0.5}', "I cannot score these."])
    context = codetree.CodeTreeContext(structured_output=False, codetree_evaluator="verifier",
                                       codetree_max_programs=2, verifier_threshold_rule=rule)
    out = codetree.build_graph(model=RespondingChatModel(respond=respond)).invoke({"problem": PROBLEM},
                                                                                  context=context)
    assert out["nodes"]["n2"]["critic_verdict"] is True and out["stop_reason"] == "accepted"
    assert out["cost"]["parse_failures"] == 1


@pytest.mark.parametrize("verifier_input", ["execution", "thoughts"])
def test_codetree_with_a_prm_endpoint_as_its_critic(prm_server, verifier_input):
    """The run above with a trained PRM's scores from an endpoint: no chat model scores; the math-style input
    (``verifier_input=thoughts``) sends no code or feedback."""
    answers = iter([[0.5], [0.9, 0.7]])
    server = prm_server(lambda body: (200, {"scores": next(answers)}))
    context = codetree.CodeTreeContext(structured_output=False, codetree_evaluator="verifier", verifier="http",
                                       verifier_url=server.url, verifier_input=verifier_input)
    out = codetree.build_graph(model=RespondingChatModel(respond=codetree_script([]))).invoke(
        {"problem": PROBLEM}, context=context)
    assert out["nodes"]["n1"]["critic_score"] == 2 and out["stop_reason"] == "accepted"
    assert [len(b["thoughts"]) for b in server.bodies] == [1, 2]
    sent = [(b["code"], b["feedback"]) for b in server.bodies]
    if verifier_input == "thoughts":
        assert sent == [("", ""), ("", "")]
    else:
        assert sent[0][0].endswith("return x + 2") and "## Failed test 1:" in sent[0][1]


def rethink_respond(verifier_scores, prompts, rewrites=("Still wrong.", "Thought: Add exactly one.")):
    """Scripted RethinkMCTS replies; ``rewrites`` answer the Verifier's refine and the paper's leaf rethink alike."""
    scores, refines = list(verifier_scores), list(rewrites)
    expansions = iter("ABCDEF")

    def respond(messages):
        text = "\n".join(str(m.content) for m in messages)
        prompts.append(text)
        if "judge the correctness of each thought" in text:
            return scores.pop(0)
        if "Revise and enhance the" in text or "provide a new Thought to replace the previous thought" in text:
            return refines.pop(0)
        assert "correctness score in range [-1, 1]" not in text, "self-evaluation is replaced"
        if "Reasonableness" in text:
            return json.dumps([{"Thought-1": f"Use {next(expansions)}.", "Reasonableness": 1.0}])
        if "Add exactly one." in text:
            return "```python\ndef inc(x):\n    return x + 1\n```"
        return "```python\ndef inc(x):\n    return x + 2\n```"

    return respond


def test_rethink_mcts_with_verifier_evaluation_and_localisation():
    prompts: list[str] = []
    # rollout 1: n1 fails, the Verifier points at n1 (its only thought), the rewrite still fails; rollout 2: n2
    # (below n1) fails, the Verifier scores [0.2, 0.9] so n1, an ancestor, is rewritten rather than the leaf;
    # the program then passes and is valued v_llm = 2 · mean(0.8, 1.0) - 1 = 0.8
    respond = rethink_respond(['{"1-Thought": 0.9}', '{"1-Thought": 0.2, "2-Thought": 0.9}',
                               '{"1-Thought": 0.8, "2-Thought": 1.0}'], prompts)
    context = rethink_mcts.RethinkContext(structured_output=False, rethink_width=1, rethink_rollouts=2,
                                          rethink_block_info=False, rethink_evaluator="verifier",
                                          rethink_locate="verifier")
    out = rethink_mcts.build_graph(model=RespondingChatModel(respond=respond)).invoke({"problem": PROBLEM},
                                                                                      context=context)
    nodes = out["nodes"]
    refines = [p for p in prompts if "Revise and enhance the" in p]
    assert len(refines) == 2 and "Revise and enhance the 1-Thought" in refines[1]
    located = [p for p in prompts if "judge the correctness of each thought" in p][:2]  # the failing programs
    assert all("## Failed test 1:" in p for p in located)  # CodePRM's feedback format, not the verbal analysis
    assert "\n1-Thought: Still wrong.\n2-Thought: Use B." in refines[1]
    assert nodes["n1"]["text"] == "Add exactly one." and nodes["n1"]["replaced_thought"] == "Still wrong."
    assert nodes["n2"]["rethinks"] == 1 and nodes["n2"]["text"] == "Use B."
    assert nodes["n2"]["v_llm"] == pytest.approx(0.8) and nodes["n2"]["reward"] == pytest.approx(0.8 + 0.2 * 0.8)
    assert out["final_node"] == "n2" and out["final_code"].endswith("x + 1")


def test_rethink_mcts_with_verifier_evaluation_alone_keeps_the_leaf_rethink():
    """``rethink_evaluator=verifier`` without ``rethink_locate``: the failing leaf is rethought with the paper's
    prompt (no Verifier call for it) and only passing programs are scored: n1's v_llm = 2 · 0.6 - 1."""
    prompts: list[str] = []
    respond = rethink_respond(['{"1-Thought": 0.6}', '{"1-Thought": 0.6, "2-Thought": 1.0}'], prompts,
                              rewrites=["Thought: Add exactly one."])
    context = rethink_mcts.RethinkContext(structured_output=False, rethink_width=1, rethink_rollouts=2,
                                          rethink_block_info=False, rethink_evaluator="verifier")
    out = rethink_mcts.build_graph(model=RespondingChatModel(respond=respond)).invoke({"problem": PROBLEM},
                                                                                      context=context)
    assert not any("Revise and enhance the" in p for p in prompts)
    judged = [p for p in prompts if "judge the correctness of each thought" in p]
    assert len(judged) == 2 and all("All public test cases passed!" in p for p in judged)
    assert out["nodes"]["n1"]["replaced_thought"] == "Use A." and out["nodes"]["n1"]["text"] == "Add exactly one."
    assert out["nodes"]["n1"]["v_llm"] == pytest.approx(0.2) and out["final_code"].endswith("x + 1")


def test_rethink_mcts_with_verifier_localisation_alone_keeps_the_self_evaluation():
    """``rethink_locate=verifier`` without ``rethink_evaluator``: the Verifier picks the thought to rewrite (as in
    the combined run above) and the passing program gets the paper's self-evaluation, not a Verifier score."""
    prompts: list[str] = []
    located = rethink_respond(['{"1-Thought": 0.9}', '{"1-Thought": 0.2, "2-Thought": 0.9}'], prompts)

    def respond(messages):
        if "correctness score in range [-1, 1]" in "\n".join(str(m.content) for m in messages):
            return '{"evaluation": 0.4, "explanation": "looks right"}'
        return located(messages)

    context = rethink_mcts.RethinkContext(structured_output=False, rethink_width=1, rethink_rollouts=2,
                                          rethink_block_info=False, rethink_locate="verifier")
    out = rethink_mcts.build_graph(model=RespondingChatModel(respond=respond)).invoke({"problem": PROBLEM},
                                                                                      context=context)
    nodes = out["nodes"]
    assert len([p for p in prompts if "judge the correctness of each thought" in p]) == 2  # the failing programs
    assert nodes["n1"]["text"] == "Add exactly one." and nodes["n2"]["text"] == "Use B."
    assert nodes["n2"]["v_llm"] == pytest.approx(0.4) and out["final_code"].endswith("x + 1")


def test_structured_verifier_decodes_the_prompts_own_format():
    """With JSON-schema decoding, the schema is the prompt's "i-Thought" dict: no second format instruction."""
    from langchain_openai import ChatOpenAI

    from tests.fake_openai import FakeOpenAI

    api = FakeOpenAI(['{"1-Thought": 0.2, "2-Thought": 0.9}'])
    try:
        model = ChatOpenAI(base_url=api.url, api_key="not-needed", model="fake", max_retries=0)
        reply = LLMVerifier(model, load_prompt("verifier"), structured=True).judge("Q", ["a", "b"], "c", "f")
    finally:
        api.close()
    assert reply.value == [0.2, 0.9] and reply.parsed
    body = api.requests[0]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["1-Thought", "2-Thought"] and set(schema["properties"]) == {"1-Thought", "2-Thought"}
    prompt = body["messages"][-1]["content"]
    assert "`i-Thought`" in prompt and "Answer with a JSON object" not in prompt


def test_rethink_localisation_from_an_unreadable_reply_draws_by_problem_leaf_and_rethink(monkeypatch):
    """An unreadable Verifier reply under ``rethink_locate=verifier`` flags from random scores keyed by the
    problem, the leaf and its rethink count: two problems sharing leaf ids do not draw alike."""
    keys = []
    original = rethink_mcts.codeprm.flawed_thoughts

    def spy(*args, key, **kwargs):
        keys.append(key)
        return original(*args, key=key, **kwargs)

    monkeypatch.setattr(rethink_mcts.codeprm, "flawed_thoughts", spy)
    prompts: list[str] = []
    respond = rethink_respond(["not a score", "still not", '{"1-Thought": 0.8, "2-Thought": 1.0}'], prompts)
    context = rethink_mcts.RethinkContext(structured_output=False, rethink_width=1, rethink_rollouts=2,
                                          rethink_block_info=False, rethink_evaluator="verifier",
                                          rethink_locate="verifier")
    problem = {**PROBLEM, "id": "T/b"}  # n2's draws [0.857, 0.335]: its 2nd thought is the lowest, not the 1st
    out = rethink_mcts.build_graph(model=RespondingChatModel(respond=respond)).invoke({"problem": problem},
                                                                                      context=context)
    assert out["cost"]["parse_failures"] >= 2
    assert keys[:2] == ["T/b:n1:0", "T/b:n2:0"]
    rewrites = [p.split("Revise and enhance the ")[1].split("-Thought")[0] for p in prompts
                if "Revise and enhance the" in p]
    assert rewrites[:2] == ["1", "2"]


def test_the_verifier_example_answer_is_released_placeholders_or_none():
    """verifier_example: the released scores, placeholders in their place, or the prompt cut before the example."""
    from codeforest.agents.verifier import with_example
    from codeforest.prompts import load_prompt

    prompt = load_prompt("verifier")
    released = prompt.render("scores_format.text")
    assert '"1-Thought": 0.3,' in released and with_example(prompt, "released") is prompt
    shown = with_example(prompt, "placeholders").render("scores_format.structured")
    assert shown.endswith('{"1-Thought": <score of thought 1>, "2-Thought": <score of thought 2>, '
                          '"3-Thought": <score of thought 3>}')
    cut = with_example(prompt, "none").render("scores_format.text")
    assert cut.endswith("with no other words or explanation attached.") and "0.3" in cut  # the rubric stays
    assert with_example(prompt, "none").render("execution").startswith("{state}")


def test_a_graphs_verifier_takes_the_example_setting():
    from codeforest.context import VerifierContext
    from codeforest.graphs import codeprm
    from tests.fakes import ScriptedChatModel

    scorer = codeprm.verifier(VerifierContext(verifier_example="placeholders"), ScriptedChatModel.of())
    assert "<score of thought 2>" in scorer.prompt.render("scores_format.text")
