"""Parts some tests need from the machine (Debian packages, the benchmark folder): skipped without them, failed
under ``CI=true``."""

from __future__ import annotations

import os

import pytest


def missing(message: str) -> None:
    """Stop the test for a missing system part: a failure under ``CI=true``, else a skip naming the fix."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)
