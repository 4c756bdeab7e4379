"""Shared fixtures. The benchmark data folder (../shared/data) is required: tests fail without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeforest.problems import find_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    folder = find_data_dir()
    assert folder is not None, "the benchmark folder ../shared/data (or $CODEFOREST_DATA) is required"
    return folder


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path_factory):
    """No CODEFOREST_* setting of the developer's leaks into a test."""
    for key in list(os.environ):
        if key.startswith("CODEFOREST_") and key not in ("CODEFOREST_DATA", "CODEFOREST_CACHE"):
            monkeypatch.delenv(key)
