"""The import contract (pyproject's ``[tool.importlinter]``): every import goes down the layers, plain data <- tools <-
agents <- graphs <- the harness and the command line.

import-linter reads a package from its folder, and this checkout maps ``codeforest.graphs`` and its siblings to
top-level folders (``[tool.setuptools.package-dir]``), so the check runs on a copy laid out under the installed
names, as a wheel installs them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

from codeforest import package_layout

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"


def installed_layout(dest: Path) -> Path:
    """The package copied to ``dest`` as a wheel installs it."""
    return package_layout.installed_layout(ROOT, dest)


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    """import-linter over the copy at ``tree``, with the project's contract."""
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint), str(PYPROJECT), "--no-cache"], cwd=tree, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})


def test_every_import_goes_down_the_layers(tmp_path):
    result = lint_imports(installed_layout(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Imports go down the layers KEPT" in result.stdout


def test_an_import_up_a_layer_breaks_the_contract(tmp_path):
    tree = installed_layout(tmp_path)
    (tree / "codeforest" / "tools" / "upward.py").write_text("from codeforest.graphs import kit\n")
    result = lint_imports(tree)
    assert result.returncode == 1
    assert "codeforest.tools.upward -> codeforest.graphs.kit" in result.stdout


def test_a_module_without_a_layer_breaks_the_contract(tmp_path):
    tree = installed_layout(tmp_path)
    (tree / "codeforest" / "unplaced.py").write_text("")
    result = lint_imports(tree)
    assert result.returncode == 1
    assert "codeforest.unplaced" in result.stdout


def codeforest_imports(root: Path) -> list[tuple[str, str, str]]:
    """(file, module, name) of every ``from codeforest... import name`` in the scripts under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("codeforest"):
                found += [(str(path.relative_to(root)), node.module, alias.name) for alias in node.names]
    return found


def test_every_measurement_script_imports_what_the_package_has():
    """The scripts that made the committed measurements rerun after a module moves (they are not imported by the
    tests otherwise)."""
    missing = []
    for path, module, name in codeforest_imports(ROOT / "measurements"):
        owner = importlib.import_module(module)
        if not hasattr(owner, name) and importlib.util.find_spec(f"{module}.{name}") is None:
            missing.append(f"{path}: from {module} import {name}")
    assert not missing, missing
