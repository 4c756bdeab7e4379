"""The names of the embedded models, and the name a model's calls are counted and priced under."""

from __future__ import annotations

from pathlib import PurePath

# each embedded model's file name (without .gguf), under the name a user gives it
EMBEDDED_FILES = {"local": "qwen2.5-coder-1.5b-instruct-q4_k_m", "small": "qwen2.5-coder-0.5b-instruct-q4_k_m"}
ALIASES = {"default": "local", "1.5b": "local", "0.5b": "small", "fast": "small"}


def embedded_key(model: str) -> str | None:
    """The embedded model a name refers to ('local', 'small'), or None for anything else."""
    key = ALIASES.get(model.lower(), model.lower())
    return key if key in EMBEDDED_FILES else None


def counted_name(model: str, base_url: str = "") -> str:
    """The name a model's calls are counted and priced under: the model name at its endpoint (``base_url``), an
    embedded model's file name (a .gguf path's stem)."""
    if base_url:
        return model
    key = embedded_key(model)
    if key is not None:
        return EMBEDDED_FILES[key]
    return PurePath(model).stem if model.endswith(".gguf") else model
