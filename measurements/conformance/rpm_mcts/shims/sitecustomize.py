"""Shim: the released RPM-MCTS's OpenAI client waits the client's default 600 s for a reply, and the embedded model
on a CPU can take longer for a long answer (the released calls set no max_tokens); the client's retry, and then
the released backoff (20 tries), would ask the same prompt again. The client's time-out becomes an hour."""

import openai

_init = openai.OpenAI.__init__


def _patient(self, *args, **kwargs):
    kwargs["timeout"] = 3600
    _init(self, *args, **kwargs)


openai.OpenAI.__init__ = _patient
