"""Secrets out of the text codeforest shows or keeps: error messages, records kept in git, program output.

Three kinds are masked with ``***``: the user and password of a URL (also as a ``Basic`` header), a ``Bearer``
token, and the value of every environment variable whose name says it holds a secret (``OPENAI_API_KEY``,
``E2B_API_KEY``, ``HF_TOKEN`` ...), wherever it appears, so a key an endpoint echoes in its error body, or one a
program got hold of and printed, never reaches a log, a prompt or a results file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]+@")
# an Authorization header's token, or its base64 user:password ("Basic" capitalised: "basic operations" is prose)
_AUTHORIZATION = re.compile(r"(\b(?:[Bb]earer|Basic)\s+)[\w.~+/=-]{8,}")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_VARIABLE_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # OPENAI_API_KEY, not a key such as AKIA0123
MIN_SECRET_CHARS = 8  # shorter values ("1", "true", "none") would mask ordinary text


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the environment variables named like secrets (``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
    ``*PASSWORD*``, ``*CREDENTIAL*``), longest first. A value that is a variable's name points at the secret
    (``CODEFOREST_API_KEY_ENV=MY_LLM``: ``$MY_LLM`` is masked, not the name); values under 8 characters are left
    out."""
    env = os.environ if environ is None else environ
    found = set()
    for name, value in env.items():
        if not _SECRET_NAME.search(name):
            continue
        if _VARIABLE_NAME.fullmatch(value):
            value = env.get(value, "")
        if len(value) >= MIN_SECRET_CHARS:
            found.add(value)
    return sorted(found, key=lambda value: (-len(value), value))


def mask_secrets(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with every value of ``secrets`` (default: ``secret_values()``) replaced by ``***``."""
    for value in secret_values() if secrets is None else secrets:
        text = text.replace(value, "***")
    return text


def redact(text: str) -> str:
    """``text`` without URL credentials, authorization header tokens or the values of secret environment variables."""
    text = _USERINFO.sub(r"\g<scheme>***@", text)
    return mask_secrets(_AUTHORIZATION.sub(r"\1***", text))
