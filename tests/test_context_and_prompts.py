"""Contexts (per method, validated, env overrides) and prompt loading/overriding."""

from __future__ import annotations

import typing

import pytest

from codeforest.context import Context, ThoughtTreeContext, VerifierContext
from codeforest.prompts import PromptError, load_prompt
from codeforest.registry import graph_module, graph_names

CONTEXTS = {name: graph_module(name).CONTEXT for name in graph_names()}


def test_env_fills_settings_not_given_and_a_given_value_wins(monkeypatch):
    monkeypatch.setenv("CODEFOREST_TEMPERATURE", "0.7")
    monkeypatch.setenv("CODEFOREST_MODEL", "small")
    monkeypatch.setenv("CODEFOREST_STRUCTURED_OUTPUT", "false")
    ctx = Context(model="local")  # given, though equal to the default: it wins over the environment
    assert ctx.temperature == 0.7 and ctx.model == "local" and ctx.structured_output is False
    assert Context(temperature=0.2).temperature == 0.2
    assert Context().model == "small"


def test_a_context_converted_to_a_graphs_class_keeps_given_values_against_the_environment(monkeypatch):
    monkeypatch.setenv("CODEFOREST_MODEL", "small")
    monkeypatch.setenv("CODEFOREST_RETHINK_RETHINK", "false")
    converted = CONTEXTS["rethink_mcts"].of(Context(model="local", sandbox="local"))
    assert converted.model == "local" and converted.rethink_rethink is False


def test_cli_flags_win_over_the_environment(monkeypatch):
    from codeforest.cli import build_parser
    from codeforest.cli.common import context_from_args

    monkeypatch.setenv("CODEFOREST_MODEL", "small")
    monkeypatch.setenv("CODEFOREST_SANDBOX", "e2b")
    args = build_parser().parse_args(["solve", "--dataset", "humaneval", "--model", "local", "--sandbox", "local"])
    assert (context_from_args(args).model, context_from_args(args).sandbox) == ("local", "local")
    args = build_parser().parse_args(["solve", "--dataset", "humaneval"])
    assert (context_from_args(args).model, context_from_args(args).sandbox) == ("small", "e2b")


def test_bad_env_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("CODEFOREST_MAX_TOKENS", "lots")
    with pytest.raises(ValueError, match="CODEFOREST_MAX_TOKENS='lots' is not a valid max_tokens"):
        Context()


def test_method_settings_come_from_the_environment_too(monkeypatch):
    monkeypatch.setenv("CODEFOREST_RETHINK_RETHINK", "false")
    monkeypatch.setenv("CODEFOREST_CODETREE_ORDER", "bfs")
    assert CONTEXTS["rethink_mcts"]().rethink_rethink is False
    assert CONTEXTS["codetree"]().codetree_order == "bfs"
    monkeypatch.setenv("CODEFOREST_BESTER_LOOP", "forever")
    with pytest.raises(ValueError, match="CODEFOREST_BESTER_LOOP='forever'.*'rounds' or 'literal'"):
        CONTEXTS["bester"]()


ENUM_FIELDS = [(graph, field, typing.get_args(info.annotation)) for graph, cls in CONTEXTS.items()
               for field, info in cls.model_fields.items() if typing.get_origin(info.annotation) is typing.Literal]


def test_every_enum_field_is_covered():
    assert {f for _, f, _ in ENUM_FIELDS} >= {"sandbox", "codetree_order", "codetree_final", "bester_loop",
                                              "bester_selection", "bester_final"}


@pytest.mark.parametrize("graph, field, allowed", ENUM_FIELDS)
def test_every_enum_field_rejects_a_bad_value_naming_the_field_and_its_values(graph, field, allowed):
    with pytest.raises(ValueError) as raised:
        CONTEXTS[graph](**{field: "no-such-value"})
    message = str(raised.value)
    assert field in message and all(repr(value) in message for value in allowed), message
    companion = {"verifier": {"verifier_url": "http://127.0.0.1:1/prm"}}.get(field, {})  # 'http' needs its URL
    assert getattr(CONTEXTS[graph](**{field: allowed[-1]}, **companion), field) == allowed[-1]


@pytest.mark.parametrize("graph, field, bad", [
    ("codetree", "codetree_max_programs", 0), ("codetree", "codetree_max_depth", 0), ("codetree", "codetree_width", -1),
    ("rethink_mcts", "rethink_rollouts", 0), ("rethink_mcts", "rethink_gamma", 1.5),
    ("rethink_mcts", "rethink_concurrency", 0), ("bester", "bester_width", 0), ("bester", "bester_depth", -1),
    ("direct", "temperature", -0.1), ("direct", "max_tokens", -2), ("direct", "test_timeout", 0),
])
def test_budgets_and_ranges_are_checked(graph, field, bad):
    with pytest.raises(ValueError, match=field):
        CONTEXTS[graph](**{field: bad})


def test_a_context_takes_the_fields_its_class_has_and_names_unknown_ones():
    codetree = CONTEXTS["codetree"]
    converted = codetree.of(CONTEXTS["rethink_mcts"](model="small", rethink_rollouts=3))
    assert type(converted) is codetree and converted.model == "small"
    assert "rethink_rollouts" not in codetree.model_fields
    assert codetree.of({"codetree_max_programs": 4}).codetree_max_programs == 4
    with pytest.raises(ValueError, match="Unknown setting.*codetree_max_program\\b"):
        codetree.of({"codetree_max_program": 4})
    with pytest.raises(ValueError, match="rethink_rollouts"):
        codetree(rethink_rollouts=4)  # another method's setting is not this graph's


def test_each_graph_shows_only_its_own_settings():
    shared = set(Context.model_fields) | set(VerifierContext.model_fields) | set(ThoughtTreeContext.model_fields)
    for graph, cls in CONTEXTS.items():
        own = {f for f in cls.model_fields if f not in shared}
        prefix = {"direct": None, "codetree": "codetree_", "rethink_mcts": "rethink_", "bester": "bester_",
                  "rpm_mcts": "rpm_", "gvr": "gvr_", "gvr_bon": "gvr_bon_", "resample": "resample_",
                  "reflexion": "bester_"}[graph]
        assert all(prefix and f.startswith(prefix) for f in own), (graph, own)
        assert graph != "gvr" or not any(f.startswith("gvr_bon_") for f in own)
        verifies = issubclass(cls, VerifierContext)
        assert verifies == (graph in ("gvr", "gvr_bon", "codetree", "rethink_mcts")), graph
        assert issubclass(cls, ThoughtTreeContext) == (graph in ("gvr", "rethink_mcts")), graph  # their thoughts


def test_packaged_prompt_renders_only_declared_inputs():
    prompt = load_prompt("solver")
    text = prompt.render("user_with_hint", problem="P {not_a_var}", hint="use a set")
    assert text.startswith("P {not_a_var}") and text.endswith("Hint: use a set")
    assert "python code" in prompt.render("system.function")


def test_thought_tree_solver_frames_stdio_problems_as_the_released_apps_handler():
    prompt = load_prompt("solver_mcts")
    function = prompt.render("user_with_thoughts.function", problem="def f(x):", thoughts="\nThought: add one")
    stdio = prompt.render("user_with_thoughts.stdio", problem="Read n.", thoughts="\nThought: add one")
    assert function.endswith("No other explanation or words attached!\ndef f(x):\nThought: add one")
    assert stdio.endswith("\n\nQUESTION:\nRead n.\nUse Standard Input format\nANSWER:\n\nThought: add one")


def test_user_prompts_dir_overrides_file_by_file(tmp_path):
    (tmp_path / "solver.yaml").write_text(
        "inputs: [problem]\ntemplates:\n  system:\n    function: MINE\n    stdio: OURS\n  user: 'Q: {problem}'\n")
    prompt = load_prompt("solver", tmp_path)
    assert prompt.render("system.function") == "MINE" and prompt.render("user", problem="x") == "Q: x"
    with pytest.raises(PromptError, match="has no template 'system.other'"):
        prompt.render("system.other")
    # a template split by problem kind but missing one fails when the folder loads, not on that kind's problem
    (tmp_path / "solver.yaml").write_text("inputs: [problem]\ntemplates:\n  system:\n    function: MINE\n")
    with pytest.raises(PromptError, match="template 'system' is split by problem kind but has no 'stdio'"):
        load_prompt("solver", tmp_path)
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


def test_a_context_keeps_its_own_class_defaults_across_conversions():
    from codeforest.graphs.bester import BesterContext
    from codeforest.graphs.reflexion import ReflexionContext

    into_reflexion = ReflexionContext.of(BesterContext(bester_depth=4))  # the other class's defaults stay behind
    assert (into_reflexion.bester_depth, into_reflexion.bester_width, into_reflexion.bester_final) == \
        (4, 1, "last_round")
    into_bester = BesterContext.of(ReflexionContext())  # a subclass's values are its own, defaults included
    assert (into_bester.bester_depth, into_bester.bester_width) == (19, 1)


def test_a_server_run_is_sent_every_setting_that_can_change_its_result(monkeypatch):
    from codeforest.registry import context_for
    from codeforest.server_runs import server_context

    sent = server_context(context_for("rethink_mcts", Context(model="m", base_url="http://h/v1", cache_path="/x")))
    assert sent["temperature"] == 0.0 and sent["rethink_rethink"] is True and sent["base_url"] == "http://h/v1"
    assert "cache_path" not in sent and "request_timeout" not in sent  # local, and operational at its default
    monkeypatch.setenv("CODEFOREST_TEMPERATURE", "0.8")  # the server's environment: what was sent wins there
    assert CONTEXTS["rethink_mcts"](**sent).temperature == 0.0


def test_a_misspelt_prompt_file_is_refused_rather_than_silently_unused(tmp_path):
    from codeforest.prompts import check_prompts_dir

    (tmp_path / "solver.yaml").write_text("inputs: [problem]\ntemplates:\n  user: 'Solve {problem}'\n")
    assert check_prompts_dir(tmp_path) == ["solver"]
    (tmp_path / "solvr.yaml").write_text("inputs: [problem]\ntemplates:\n  user: 'Solve {problem}'\n")
    with pytest.raises(PromptError, match=r"solvr.yaml replaces no prompt .* named .*solver, "):
        check_prompts_dir(tmp_path)


def test_a_codeforest_variable_that_names_no_setting_is_found(capsys, monkeypatch, tmp_path):
    from codeforest.cli import main
    from codeforest.registry import unknown_env_settings

    assert unknown_env_settings({"CODEFOREST_MODEL": "small", "CODEFOREST_GVR_ROLLOUTS": "3", "PATH": "/bin",
                                 "CODEFOREST_DATA": "/d", "CODEFOREST_VERIFIER_URL": "http://x"}) == []
    assert unknown_env_settings({"CODEFOREST_CODETREE_ORDR": "bfs", "CODEFOREST_RPM_KB": "false"}) == [
        "CODEFOREST_CODETREE_ORDR"]
    monkeypatch.setenv("CODEFOREST_CODETREE_ORDR", "secret-value")
    assert main(["report", str(tmp_path)]) == 2  # an empty folder: the note comes first all the same
    err = capsys.readouterr().err
    assert "CODEFOREST_CODETREE_ORDR names no setting of any graph and is ignored" in err
    assert "secret-value" not in err
