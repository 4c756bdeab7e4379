"""The registry, langgraph.json and the installed package agree."""

from __future__ import annotations

import importlib
import json
from importlib import resources
from pathlib import Path

from codeforest.pg_server import registered_graphs
from codeforest.registry import GRAPHS, build_graph

ROOT = Path(__file__).resolve().parent.parent


def test_langgraph_json_registers_every_graph_by_module_path():
    declared = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    assert declared == {name: f"{module}:graph" for name, module in GRAPHS.items()} == registered_graphs()
    for name, module in GRAPHS.items():
        mod = importlib.import_module(module)
        assert mod.graph.name == name, "the exported graph is compiled with its registry name"
        assert build_graph(name).name == name


def test_packages_map_to_the_top_level_folders():
    for sub, folder in [("graphs", "graphs"), ("agents", "agents"), ("tools", "tools"), ("prompts", "prompts")]:
        mod = importlib.import_module(f"codeforest.{sub}")
        assert Path(mod.__file__).resolve().parent == ROOT / folder
    assert (resources.files("codeforest.prompts") / "solver.yaml").is_file()
