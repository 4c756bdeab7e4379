"""Context env overrides and prompt loading/overriding."""

from __future__ import annotations

import pytest

from codeforest.context import Context
from codeforest.prompts import PromptError, load_prompt


def test_env_overrides_defaults_but_not_explicit_values(monkeypatch):
    monkeypatch.setenv("CODEFOREST_TEMPERATURE", "0.7")
    monkeypatch.setenv("CODEFOREST_MODEL", "small")
    monkeypatch.setenv("CODEFOREST_STRUCTURED_OUTPUT", "false")
    ctx = Context(model="local")  # explicit equals the default: the environment still wins, as documented
    assert ctx.temperature == 0.7 and ctx.model == "small" and ctx.structured_output is False
    assert Context(temperature=0.2).temperature == 0.2


def test_bad_env_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("CODEFOREST_MAX_TOKENS", "lots")
    with pytest.raises(ValueError, match="CODEFOREST_MAX_TOKENS='lots' is not a valid int"):
        Context()


def test_packaged_prompt_renders_only_declared_inputs():
    prompt = load_prompt("solver")
    text = prompt.render("user_with_hint", problem="P {not_a_var}", hint="use a set")
    assert text.startswith("P {not_a_var}") and text.endswith("Hint: use a set")
    assert "python code" in prompt.render("system.function")


def test_user_prompts_dir_overrides_file_by_file(tmp_path):
    (tmp_path / "solver.yaml").write_text(
        "inputs: [problem]\ntemplates:\n  system:\n    function: MINE\n  user: 'Q: {problem}'\n")
    prompt = load_prompt("solver", tmp_path)
    assert prompt.render("system.function") == "MINE" and prompt.render("user", problem="x") == "Q: x"
    with pytest.raises(PromptError, match="has no template 'system.stdio'"):
        prompt.render("system.stdio")
    (tmp_path / "solver.yaml").write_text("just text")
    with pytest.raises(PromptError, match="needs a 'templates' mapping"):
        load_prompt("solver", tmp_path)
    with pytest.raises(PromptError, match="does not exist"):
        load_prompt("solver", tmp_path / "missing")


def test_every_packaged_prompt_parses_and_declares_its_inputs():
    from importlib import resources

    for file in resources.files("codeforest.prompts").iterdir():
        if file.name.endswith(".yaml"):
            prompt = load_prompt(file.name[:-5])
            assert prompt.inputs and prompt.templates, file.name
