"""Run the released ``baselines/run_all.py`` as its README does (``python baselines/run_all.py``): its argument
parser, its defaults and its ``main`` unchanged, with two of its functions replaced, neither in the search:

- ``set_environment_by_model`` accepts one model name, ``Qwen2.5-7B-Instruct``, and points the client at
  ``http://localhost:8000/v1`` (its own default ``--base_model``, ``qwen3-235b-a22b``, raises). The released function
  still runs (it sets ``MODEL_NAME`` and ``OPENAI_API_KEY``); the base URL then becomes ``$CONFORMANCE_BASE_URL``
  (the recorder).
- ``get_dataset_path`` names the whole 150-problem file; here the run's problems: ``$CONFORMANCE_DATASET``, rows of
  that same file in the sample's order.

And one keyword the released code misspells, unless $RPM_KEEP_TYPO is 1: after a roll-out fails its public tests
with the block-level debugger off (the released setting, ``use_ldb_debug=False``), ``MCTS_Task.remove_wrong_steps``
fills ``remove_wrong_steps_debug_failed_prompt_en`` with ``reflction=...`` where the template names ``{reflection}``,
so ``str.format`` raises KeyError: every problem whose roll-out fails a public test ends there, and the released
ConcurrentProcessor drops it after one retry. Here that one template is a ``str`` whose ``format`` takes the
misspelt keyword for the one it names: the prompt sent is the released text with the evaluator's analysis in its
reflection slot, and nothing else in the search changes.

Usage (from the checkout): python run_released.py baselines/run_all.py ARGS..."""

import ast
import os
import sys

script = os.path.abspath(sys.argv[1])
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(script))  # as `python baselines/run_all.py` has its folder first on the path

tree = ast.parse(open(script, encoding="utf-8").read(), script)
guard = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'"]
assert len(guard) == 1, f"{script}: expected one `if __name__ == '__main__':` block"
namespace = {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__}
exec(compile(ast.Module([n for n in tree.body if n is not guard[0]], []), script, "exec"), namespace)

released_environment = namespace["set_environment_by_model"]


def set_environment_by_model(model_name):
    released_environment(model_name)
    os.environ["OPENAI_API_BASE"] = os.environ["CONFORMANCE_BASE_URL"]
    print(f"[conformance shim] model {os.environ['MODEL_NAME']!r} at {os.environ['OPENAI_API_BASE']}")


def get_dataset_path(dataset_name):
    print(f"[conformance shim] {dataset_name}: the run's problems from {os.environ['CONFORMANCE_DATASET']}")
    return os.environ["CONFORMANCE_DATASET"]


if os.environ.get("RPM_KEEP_TYPO") != "1":
    # The released run_mcts.py puts baselines/RPM_MCTS first on the path and MCTS/task.py then does
    # `from prompt.prompts import *`: the template is replaced in that module before anything imports it.
    sys.path.insert(0, os.path.join(os.path.dirname(script), "RPM_MCTS"))
    from prompt import prompts

    class _Template(str):
        def format(self, *args, **kwargs):
            if "reflction" in kwargs and "reflection" not in kwargs:
                kwargs["reflection"] = kwargs.pop("reflction")
            return str.format(self, *args, **kwargs)

    prompts.remove_wrong_steps_debug_failed_prompt_en = _Template(prompts.remove_wrong_steps_debug_failed_prompt_en)
    print("[conformance shim] remove_wrong_steps_debug_failed_prompt_en takes the released `reflction=` as its "
          "{reflection} (RPM_KEEP_TYPO=1 runs the KeyError as released)")

namespace["set_environment_by_model"] = set_environment_by_model
namespace["get_dataset_path"] = get_dataset_path
exec(compile(ast.Module(guard[0].body, []), script, "exec"), namespace)
