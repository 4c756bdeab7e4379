"""codeforest: LangGraph tree-search code-generation agents."""

from codeforest.api import solve
from codeforest.chat import as_chat_graph, as_solver_tool, problem_from_text
from codeforest.context import Context
from codeforest.problems import Problem, Task, load_dataset, load_problem
from codeforest.registry import build_graph, context_for, graph_names

__all__ = ["Context", "Problem", "Task", "as_chat_graph", "as_solver_tool", "build_graph", "context_for",
           "graph_names", "load_dataset", "load_problem", "problem_from_text", "solve"]
