"""Shim: the released CodeTree imports vLLM at module level for its local-model path, which a run against an
OpenAI-compatible endpoint never takes. Using either name is an error."""


class LLM:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("vLLM is not installed: the conformance run talks to an OpenAI-compatible endpoint")


class SamplingParams(LLM):
    pass
