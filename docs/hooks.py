"""MkDocs hooks: the pages written from the code (settings, command line, results, changelog) and the settings
table a method page asks for with ``<!-- settings: GRAPH -->``."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from mkdocs.structure.files import File

from codeforest import docs_pages, package_layout
from codeforest.report import PLOT

ROOT = Path(__file__).resolve().parent.parent
# mkdocs.yml's mkdocstrings ``paths``: one folder per build when several run at once
INSTALLED = Path(os.environ.get("CODEFOREST_DOCS_PACKAGE") or ROOT / "build" / "docs-package")
SETTINGS = re.compile(r"<!-- settings: (\w+) -->")


def on_startup(command, dirty):
    """Lay the package out as installed for the API reference (before mkdocstrings reads its ``paths``)."""
    shutil.rmtree(INSTALLED, ignore_errors=True)
    package_layout.installed_layout(ROOT, INSTALLED)


def on_config(config):
    """Add a results page per measurement folder to the navigation."""
    for section in config["nav"]:
        if "Results" in section:
            names = docs_pages.result_folders(ROOT / "measurements")
            section["Results"] += [{name: f"results/{name}.md"} for name in names]
    return config


def on_files(files, config):
    """Write the generated pages and copy the plots into the site."""
    pages = {"reference/settings.md": docs_pages.settings_reference(), "reference/cli.md": docs_pages.cli_reference(),
             "changelog.md": (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")}
    for name, folder in docs_pages.result_folders(ROOT / "measurements").items():
        plot = folder / PLOT
        plot_name = f"{folder.name}.png" if plot.is_file() else None  # beside its page: results/NAME.png
        if plot_name:
            files.append(File.generated(config, f"results/{name}.png", abs_src_path=str(plot)))
        pages[f"results/{name}.md"] = docs_pages.results_page(name, folder, plot_name)
    for path, content in pages.items():
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    """Put each ``<!-- settings: GRAPH -->`` mark's table of that graph's settings in its place."""
    return SETTINGS.sub(lambda m: docs_pages.graph_settings(m.group(1)), markdown)
