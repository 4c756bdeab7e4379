"""Secrets never reach text codeforest shows or keeps."""

from __future__ import annotations

from codeforest.suites import TestSuite
from codeforest.tools.redaction import redact, secret_values
from codeforest.tools.sandbox import LocalSandbox

KEY = "sk-proj-0123456789abcdef"


def test_redact_masks_url_credentials_authorization_tokens_and_secret_variables(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MY_LLM", "tok_live_9876543210")
    monkeypatch.setenv("CODEFOREST_API_KEY_ENV", "MY_LLM")  # names the variable: its value is the secret
    monkeypatch.setenv("PRM_TOKEN", "short")
    text = (f"401 from http://ann:pw123@host/v1: Incorrect API key provided: {KEY}; sent Authorization: "
            "Bearer abcdefgh12345678, Basic YW5uOnB3MTIz; proxy saw tok_live_9876543210; set MY_LLM or "
            "OPENAI_API_KEY; short; basic operations")
    assert redact(text) == ("401 from http://***@host/v1: Incorrect API key provided: ***; sent Authorization: "
                            "Bearer ***, Basic ***; proxy saw ***; set MY_LLM or OPENAI_API_KEY; short; "
                            "basic operations")


def test_secret_values_come_from_secret_names_only():
    env = {"HF_TOKEN": "hf_abcdefghij", "E2B_API_KEY": "e2b_0123456789", "AWS_SECRET_ACCESS_KEY": "AKIA0123456789",
           "PATH": "/usr/local/bin:/usr/bin", "CODEFOREST_API_KEY_ENV": "UNSET_VARIABLE", "DB_PASSWORD": "hunter2"}
    assert secret_values(env) == ["AKIA0123456789", "e2b_0123456789", "hf_abcdefghij"]


def test_a_program_that_prints_a_secret_shows_it_masked(monkeypatch):
    """Feedback, prompts and trees are built from what a program printed: a key it got hold of stays out."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    program = f"def f():\n    print({KEY!r})\n    return {KEY!r}\n"
    result = LocalSandbox().run(program, TestSuite.function(["assert f() == 1"], "f"))
    (outcome,) = result.outcomes
    assert not outcome.passed and outcome.actual is not None and "***" in outcome.actual
    assert KEY not in repr(result)
