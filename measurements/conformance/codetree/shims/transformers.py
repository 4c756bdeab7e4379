"""Shim: the released CodeTree imports a tokenizer class at module level for its local-model path only."""


class AutoTokenizer:
    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        raise RuntimeError("transformers is not installed: the conformance run talks to an OpenAI-compatible endpoint")
