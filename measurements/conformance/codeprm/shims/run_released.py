"""Run the released CodePRM's run.py unchanged (from the run folder, a copy of the checkout whose path holds the
name ``CodePRM``, as ``utils.get_proj_path`` needs), with three changes outside its search:

- the packages it imports at module level and never uses on this path are shimmed (``unused_modules.py``;
  ``torch/`` beside this file holds the few calls it makes of torch);
- the OpenAI client waits an hour for a reply instead of 10 minutes: a small model on a CPU can take longer for a
  long answer, and on a time-out the client (and then the released code, up to 20 times 7 s to 140 s apart) would
  ask the same prompt again;
- the HumanEval executor gives a test 11 s of its own instead of 10, so that its 10 s wait for the whole run always
  ends first (``join_first.py`` beside ``replaykit.py``: with both at 10 s a test out of time reads at random as
  "TIMEOUT" or as 21 "No result got!").

Usage: python run_released.py run.py ARGS... (from the run folder)."""

import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)  # the torch shim and _unused
sys.path.insert(0, os.getcwd())  # the released modules first, as `python run.py` has them

import openai  # noqa: E402
from _unused import install  # noqa: E402
from unused_modules import UNUSED  # noqa: E402

install(UNUSED)
sys.path.append(os.path.dirname(os.path.dirname(here)))  # join_first, after every released module
import join_first  # noqa: E402

join_first.install()

_init = openai.OpenAI.__init__


def _patient(self, *args, **kwargs):
    kwargs["timeout"] = 3600
    _init(self, *args, **kwargs)


openai.OpenAI.__init__ = _patient
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
