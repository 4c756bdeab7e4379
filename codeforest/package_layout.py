"""The package as installed: this checkout keeps ``codeforest.graphs`` and its siblings in top-level folders
(pyproject's ``[tool.setuptools.package-dir]``); tools that read a package from one folder (the import contract's
linter, the API reference's loader) get a copy laid out under the installed names."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path


def installed_layout(checkout: Path, dest: Path) -> Path:
    """The checkout's Python files (and the packaged data beside them) copied to ``dest`` under their installed
    module paths; returns ``dest``."""
    mapping = tomllib.loads((checkout / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in sorted(mapping.items()):
        shutil.copytree(checkout / folder, dest.joinpath(*package.split(".")), dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return dest
