"""Run the released RethinkMCTS's run.py unchanged (from the run folder, a copy of the checkout), with the shims
beside this file importable and three changes outside its search:

- the OpenAI client waits an hour for a reply instead of 10 minutes: a small model on a CPU can take longer for a
  long answer, and on a time-out the client (and then the released code, up to 20 times) would ask again;
- the top-k token cache (``ChatModels.cache.GPTTopKCache.add``), which RethinkMCTS writes after every code reply and
  never reads (only the token-level MCTS does), skips a reply it cannot key instead of stopping the run. It keys the
  reply's ``logprobs`` by token text, when there is one entry per cl100k token of the reply; llama.cpp's server
  cuts a token's text at its last whole UTF-8 character, so a token holding part of one comes as "", which tiktoken
  encodes to no id (an IndexError there). OpenAI's API never sends an empty token;
- the HumanEval executor gives a test 11 s of its own instead of 10, so that its 10 s wait for the whole run always
  ends first (``join_first.py`` beside ``replaykit.py``: with both at 10 s a test out of time reads at random as
  "TIMEOUT" or as 21 "No result got!").

Usage: python run_released.py run.py ARGS... (from the run folder)."""

import os
import runpy
import sys

sys.path.insert(0, os.getcwd())  # the released modules first; the shims (this file's folder) stay after them

import openai  # noqa: E402
from ChatModels import cache  # noqa: E402 - the checkout's, once it is on the path

sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # join_first, last
import join_first  # noqa: E402

_init = openai.OpenAI.__init__


def _patient(self, *args, **kwargs):
    kwargs["timeout"] = 3600
    _init(self, *args, **kwargs)


_add = cache.GPTTopKCache.add


def _add_or_skip(self, input_ids, output_ids, scores, beam_indices=None):
    try:
        return _add(self, input_ids, output_ids, scores, beam_indices=beam_indices)
    except IndexError:
        print("conformance: a reply's logprobs hold an empty token (part of a UTF-8 character); not cached")


openai.OpenAI.__init__ = _patient
cache.GPTTopKCache.add = _add_or_skip
join_first.install()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
