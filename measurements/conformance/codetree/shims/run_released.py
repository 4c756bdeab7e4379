"""Run the released main.py with two changes outside its search: the program each problem ends with (the one
the released code scores with ``evaluate``) is appended to $CONFORMANCE_FINALS as JSON, with the run's problem ids
($CONFORMANCE_IDS, taken in that order), so a replay can compare it; and the executor's two machine-dependent names,
which its feedback shows (an error's traceback names the program's file ``temp_files/temp_test<pid>.py``, a
time-out's text the interpreter ``sys.executable``), are fixed: the process id to $CONFORMANCE_PID (4715, the one the
committed call logs name), the interpreter to ``python`` (the venv's, first on the PATH). Without that a rerun would
ask new prompts instead of the ones its log holds.
Usage: python run_released.py main.py ARGS... (from the checkout)."""

import json
import os
import runpy
import sys

sys.path.insert(0, os.getcwd())
from executors import py_executor  # noqa: E402 - the checkout's, once it is on the path


def _logged(evaluate):
    def evaluate_and_log(self, name, func, test, *args, **kwargs):
        with open(os.environ["CONFORMANCE_FINALS"], "a", encoding="utf-8") as out:
            out.write(json.dumps({"ids": os.environ["CONFORMANCE_IDS"], "entry_point": name, "program": func}) + "\n")
        return evaluate(self, name, func, test, *args, **kwargs)
    return evaluate_and_log


class _Module:
    """A module whose attributes are another's, except those given."""

    def __init__(self, module, **fixed):
        self._module, self._fixed = module, fixed

    def __getattr__(self, name):
        return self._fixed[name] if name in self._fixed else getattr(self._module, name)


RELEASED_PID = int(os.environ.get("CONFORMANCE_PID", "4715"))
py_executor.os = _Module(os, getpid=lambda: RELEASED_PID)
py_executor.sys = _Module(sys, executable="python")
for executor in (py_executor.PyExecutor, py_executor.PyExecutorPro):
    executor.evaluate = _logged(executor.evaluate)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
