"""Shim: the released CodeTree's OpenAI client waits 60 s for a reply, and a small model on a CPU takes longer for
a long answer; its retry would ask the same prompt again. The client's time-out becomes an hour, and the test
programs it starts do not load the shims."""

import os

import openai

_init = openai.OpenAI.__init__


def _patient(self, *args, **kwargs):
    kwargs["timeout"] = 3600
    _init(self, *args, **kwargs)


openai.OpenAI.__init__ = _patient

# The programs the released code tests run as child processes: they must not load this file (importing openai
# takes longer than the released 1 s a test has), so the shims leave the children's path.
os.environ.pop("PYTHONPATH", None)
