"""Shared tools: sandbox, test runners, tracing, knowledge base, model factory."""

import os
from pathlib import Path


def cache_dir() -> Path:
    """The user cache (models, knowledge bases, datasets): ``$CODEFOREST_CACHE``, else
    ``$XDG_CACHE_HOME/codeforest``."""
    if os.environ.get("CODEFOREST_CACHE"):
        return Path(os.environ["CODEFOREST_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "codeforest"


def install_hint(extra: str, *, force: bool = False) -> str:
    """The command installing an optional extra into the codeforest checkout (the project is not on PyPI)."""
    return f'pip install{" --force-reinstall" if force else ""} -e ".[{extra}]"  (run it in the codeforest checkout)'
