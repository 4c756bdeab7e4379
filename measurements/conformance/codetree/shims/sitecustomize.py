"""Shim: the released CodeTree's OpenAI client waits 60 s for a reply, and a small model on a CPU takes longer for
a long answer; its retry would ask the same prompt again. The client's time-out becomes an hour, nothing else."""

import openai

_init = openai.OpenAI.__init__


def _patient(self, *args, **kwargs):
    kwargs["timeout"] = 3600
    _init(self, *args, **kwargs)


openai.OpenAI.__init__ = _patient
