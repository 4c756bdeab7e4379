"""codeforest: LangGraph tree-search code-generation agents."""

from codeforest.api import solve
from codeforest.context import Context
from codeforest.problems import Problem, Task, load_dataset, load_problem
from codeforest.registry import build_graph, graph_names

__all__ = ["Context", "Problem", "Task", "build_graph", "graph_names", "load_dataset", "load_problem", "solve"]
