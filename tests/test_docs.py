"""The documentation site: it builds with ``mkdocs build --strict`` (a broken link or reference fails), every setting
and command is documented from the code, every method page shows its settings, and no user page speaks of how the
code came to be."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from codeforest import docs_pages
from codeforest.context import Context
from codeforest.registry import graph_module, graph_names
from codeforest.report import PLOT

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
METHOD_PAGES = {"codetree": "codetree", "rethink_mcts": "rethink_mcts", "rpm_mcts": "rpm_mcts", "bester": "bester",
                "gvr": "codeprm", "gvr_bon": "codeprm", "direct": "baselines", "resample": "baselines",
                "reflexion": "baselines"}
USER_PAGES = [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md"))]
INTERNAL_HISTORY = re.compile(r"\bsession \d|\bsessions\b|\bissue[- ]\d|\bissues? \d|20\d\d-\d\d-\d\d", re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built strictly into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "CODEFOREST_DOCS_PACKAGE": str(out.parent / "docs-package"), "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return out


def test_the_site_builds_strictly_with_every_generated_page(site):
    assert (site / "index.html").is_file()
    settings = (site / "reference" / "settings" / "index.html").read_text()
    for graph in graph_names():
        assert f'id="{graph}"' in settings
    cli = (site / "reference" / "cli" / "index.html").read_text()
    assert "codeforest bench" in cli and "--token-budget" in cli
    folders = docs_pages.result_folders(ROOT / "measurements")
    assert any("/" in name for name in folders), "a measurement kept per dataset gets a page per dataset"
    for name, folder in folders.items():
        page = (site / "results" / name / "index.html").read_text()
        assert "pass@1" in page and f"measurements/{name}/results.jsonl" in page
        assert (f"{folder.name}.png" in page) == (folder / PLOT).is_file(), name  # the plot, where the folder has one


def test_result_folders_are_the_bench_records_and_the_per_dataset_folders_of_a_measurement(tmp_path):
    def records(folder: str, first: dict) -> None:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "results.jsonl").write_text(json.dumps(first) + "\n")

    bench_record = {"problem_id": "HumanEval/0", "graph": "resample"}
    records("plain", bench_record)
    records("plain/first-runs", bench_record)  # kept beside the folder's own records: no page
    records("judge/humaneval", bench_record)  # the judge folder has no records of its own: a page per dataset
    records("judge/apps", bench_record)
    records("other-tool", {"verdict": "passed"})  # not codeforest bench's records
    assert docs_pages.result_folders(tmp_path) == {"judge/apps": tmp_path / "judge/apps",
                                                   "judge/humaneval": tmp_path / "judge/humaneval",
                                                   "plain": tmp_path / "plain"}


def test_every_method_page_shows_its_graphs_settings_with_their_defaults(site):
    for graph, page in METHOD_PAGES.items():
        assert f"<!-- settings: {graph} -->" in (DOCS / "methods" / f"{page}.md").read_text(), graph
        html = (site / "methods" / page / "index.html").read_text()
        for name in docs_pages.own_settings(graph):
            assert f"CODEFOREST_{name.upper()}" in html, (graph, name)
    assert set(METHOD_PAGES) == set(graph_names())


def test_every_setting_has_a_description():
    classes = {Context, *(graph_module(g).CONTEXT for g in graph_names())}
    missing = [f"{cls.__name__}.{name}" for cls in classes for name, field in cls.model_fields.items()
               if not (field.description or "").strip()]
    assert not missing, f"settings without a description (the settings reference shows it): {missing}"


def test_the_settings_reference_shows_each_setting_with_its_default():
    page = docs_pages.settings_reference()
    for name, field in Context.model_fields.items():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{name}`<br>"))
        assert f"`{field.default!r}`" in row and f"CODEFOREST_{name.upper()}" in row
    codetree = docs_pages.graph_settings("codetree")
    assert "| `codetree_max_depth`<br>`CODEFOREST_CODETREE_MAX_DEPTH` | int, ≥ 1 | `3` |" in codetree


def test_the_cli_reference_has_every_command_and_option():
    parser = argparse.ArgumentParser(prog="tool")
    sub = parser.add_subparsers()
    sub.add_parser("go", help="go somewhere").add_argument("--far", help="how far")
    page = docs_pages.cli_reference(parser)
    assert "## go" in page and "--far" in page and "how far" in page


def test_no_user_page_speaks_of_sessions_issues_or_dated_history():
    found = [f"{page.relative_to(ROOT)}:{n}: {line.strip()[:80]}" for page in USER_PAGES
             for n, line in enumerate(page.read_text().splitlines(), 1) if INTERNAL_HISTORY.search(line)]
    assert not found, "\n".join(found)


def test_the_readme_is_short_and_starts_with_the_two_set_up_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 210
    blocks = re.findall(r"```bash\n(.*?)\n```", text, re.S)
    assert blocks[0].startswith("python3 -m venv .venv") and 'pip install -e ".[local]"' in blocks[0]
    assert blocks[1] == 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && pytest'


def test_the_readmes_faithfulness_table_is_the_one_the_committed_replays_give():
    built = subprocess.run([sys.executable, str(ROOT / "measurements" / "conformance" / "table.py")],
                           capture_output=True, text=True, check=True).stdout
    assert built.startswith("| method | released code |") and built in (ROOT / "README.md").read_text()
