"""Documentation pages written from the code at build time: the settings of every graph (its context class), the
command line's help (its argparse parser), and the results of every measurement folder (the report's own tables).
``docs/hooks.py`` puts them into the MkDocs site, so no page copies a setting or a number by hand."""

from __future__ import annotations

import argparse
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from codeforest.context import ENV_PREFIX, Context

_BOUNDS = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<", "min_length": "length ≥"}


def accepted(field: FieldInfo) -> str:
    """What a setting accepts: its choices, or its type with its bounds."""
    annotation = field.annotation
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(f"`{choice!r}`" for choice in typing.get_args(annotation))
    name = getattr(annotation, "__name__", str(annotation).replace("typing.", ""))
    bounds = [f"{sign} {getattr(m, key)}" for m in field.metadata for key, sign in _BOUNDS.items()
              if getattr(m, key, None) is not None]
    return ", ".join([name, *bounds])


def settings_table(cls: type[BaseModel], names: list[str] | None = None) -> str:
    """A Markdown table of a context class's settings (``names``, or all): the setting, its environment
    variable, what it accepts, its default and its description."""
    rows = ["| setting | accepts | default | what it does |", "|---|---|---|---|"]
    for name in names if names is not None else list(cls.model_fields):
        field = cls.model_fields[name]
        description = (field.description or "").replace("|", "\\|").replace("\n", " ")
        rows.append(f"| `{name}`<br>`{ENV_PREFIX}{name.upper()}` | {accepted(field)} | `{field.default!r}` "
                    f"| {description} |")
    return "\n".join(rows)


def own_settings(graph: str) -> list[str]:
    """The settings a graph has beyond the ones every graph shares (``Context``)."""
    from codeforest.registry import graph_module

    return [name for name in graph_module(graph).CONTEXT.model_fields if name not in Context.model_fields]


def graph_settings(graph: str) -> str:
    """The table of a graph's own settings, with its defaults (a preset graph shows its own)."""
    from codeforest.registry import graph_module

    names = own_settings(graph)
    if not names:
        return f"`{graph}` has no settings of its own: only the [shared ones](../reference/settings.md#shared)."
    return settings_table(graph_module(graph).CONTEXT, names)


def settings_reference() -> str:
    """The settings page: the shared settings, then each graph's own."""
    from codeforest.registry import graph_names

    parts = ["# Settings", "Every setting can be given in a run's context (`context={...}` in Python, the context "
             "panel in LangGraph Studio), as a command-line flag where the command has one, or as the environment "
             f"variable `{ENV_PREFIX}<SETTING>` (upper case) when it is not given. A bad value fails before any "
             "model call, naming the setting and what it accepts.",
             "## Shared", "The settings of every graph: model, endpoint, sandbox, prompts, cache, budget, selector.",
             settings_table(Context)]
    for graph in graph_names():
        parts += [f"## {graph}", graph_settings(graph).replace("../reference/settings.md", "")]
    return "\n\n".join(parts) + "\n"


def cli_reference(parser: argparse.ArgumentParser | None = None) -> str:
    """The command-line page: ``codeforest --help``, then each command's help."""
    from codeforest.cli import build_parser

    parser = parser or build_parser()
    parts = ["# Command line", "Each command's `--help`, as the installed `codeforest` prints it.",
             "```text\n" + _help(parser) + "```"]
    for action in parser._subparsers._group_actions:  # argparse keeps its subcommands only here
        for name, sub in action.choices.items():
            parts += [f"## {name}", "```text\n" + _help(sub) + "```"]
    return "\n\n".join(parts) + "\n"


def _help(parser: argparse.ArgumentParser) -> str:
    import os

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "110"  # the same line width wherever the site is built
    try:
        return parser.format_help()
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns


def result_folders(measurements: Path) -> dict[str, Path]:
    """The measurement folders holding benchmark records (``codeforest bench``'s, not another tool's), by their path
    under ``measurements``: each folder with records, and each folder one level down in a folder without records of
    its own (a measurement kept per dataset); the runs kept beside a folder's own records are not listed."""
    top = {p.parent for p in measurements.glob("*/results.jsonl")}
    nested = {p.parent for p in measurements.glob("*/*/results.jsonl") if p.parent.parent not in top}
    return {folder.relative_to(measurements).as_posix(): folder for folder in sorted(top | nested)
            if _bench_records(folder / "results.jsonl")}


def _bench_records(path: Path) -> bool:
    import json

    with path.open(encoding="utf-8") as f:
        first = json.loads(f.readline() or "{}")
    return "problem_id" in first and "graph" in first


def results_page(name: str, folder: Path, plot_name: str | None) -> str:
    """A measurement folder's page (``name`` is its path under ``measurements``): what it holds (the READMEs of
    the measurement and of the folder, if any), the plot, and the report's tables from its records."""
    from codeforest.bench import read_results
    from codeforest.report import markdown

    parts = [f"# {name}", f"Records: `measurements/{name}/results.jsonl`; the same tables as its "
             "`report.md`, written by `codeforest report` from those records."]
    readmes = [folder.parent / "README.md"] if "/" in name else []  # a measurement kept per dataset
    for readme in [*readmes, folder / "README.md"]:
        if readme.is_file():
            parts.append(_demoted(readme.read_text(encoding="utf-8")))
    if plot_name:
        parts.append(f"![pass@1 against tokens per problem, {name}]({plot_name})")
    parts.append(markdown(read_results(folder)))
    return "\n\n".join(parts) + "\n"


def _demoted(text: str) -> str:
    """Markdown with every heading one level lower and the first title dropped (the page has its own)."""
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join("#" + line if line.startswith("#") else line for line in lines)
