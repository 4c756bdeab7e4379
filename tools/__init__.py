"""Shared tools: sandbox, test runners, tracing, knowledge base, model factory."""


def install_hint(extra: str, *, force: bool = False) -> str:
    """The command installing an optional extra into the codeforest checkout (the project is not on PyPI)."""
    return f'pip install{" --force-reinstall" if force else ""} -e ".[{extra}]"  (run it in the codeforest checkout)'
