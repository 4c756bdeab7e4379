"""Per-role output limits (the released CodeTree values) within the model's context."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from codeforest.agents.base import output_limit
from codeforest.prompts import load_prompt
from codeforest.registry import build_graph, context_for
from tests.fakes import RespondingChatModel
from tests.test_native import INC, Universal


def limits_seen(graph: str, **settings) -> list:
    model = RespondingChatModel(respond=lambda m, **kw: Universal().reply("\n".join(str(x.content) for x in m)),
                                pass_kwargs=True)
    build_graph(graph, model=model).invoke({"problem": INC}, context=context_for(graph, structured_output=False,
                                                                                 **settings))
    return [kw.get("max_tokens") for kw in model.call_kwargs]


def test_programs_get_4096_tokens_and_everything_else_2048():
    assert limits_seen("direct") == [4096]
    seen = limits_seen("codetree", codetree_max_programs=1)  # strategies, a program, the Critic's verdict
    assert seen == [2048, 4096, 2048]


def test_a_set_max_tokens_applies_to_every_call_instead():
    assert limits_seen("codetree", codetree_max_programs=1, max_tokens=300) == [None, None, None]


def test_the_embedded_servers_context_per_slot_bounds_the_limit():
    prompt = [HumanMessage("x" * 3000)]  # about 1000 tokens
    assert output_limit(prompt, "code", 0) == 4096  # an endpoint: its context is unknown
    assert output_limit(prompt, "code", 8192) == 4096
    assert output_limit(prompt, "code", 4096) == 4096 - 1000 - 64
    assert output_limit(prompt, "text", 1024) == 256  # never below the floor
    solver = load_prompt("solver")
    shown = len(solver.render("system.function")) + len(solver.render("user", problem=INC["prompt"]))
    assert limits_seen("direct", n_ctx=1024) == [1024 - shown // 3 - 64]
    assert limits_seen("direct", n_ctx=1024, server_slots=4) == [1024 - shown // 3 - 64]  # the server holds 4 x 1024


def test_the_embedded_server_holds_n_ctx_for_every_slot(monkeypatch, tmp_path):
    from codeforest.context import Context
    from codeforest.tools import models

    started = []
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"")

    class Server:
        base_url = "http://127.0.0.1:1"

    monkeypatch.setattr(models, "embedded_server", lambda path, n_ctx, slots, progress=None:
                        started.append((n_ctx, slots)) or Server())
    models.get_chat_model(Context(model=str(gguf), n_ctx=4096, server_slots=3))
    assert started == [(3 * 4096, 3)]


def test_max_tokens_minus_one_sends_no_limit_to_the_endpoint():
    """-1: the request carries no max_tokens at all (the released RPM-MCTS client's calls), through a real client."""
    from codeforest.context import Context
    from codeforest.tools.models import get_chat_model
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI(["one", "two"]) as endpoint:
        for limit, sent in ((-1, None), (300, 300)):
            model = get_chat_model(Context(model="m", base_url=endpoint.url, max_tokens=limit, retries=0))
            model.invoke([HumanMessage("hi")])
            assert endpoint.requests[-1].get("max_tokens", endpoint.requests[-1].get("max_completion_tokens")) == sent
    assert limits_seen("direct", max_tokens=-1) == [None]
