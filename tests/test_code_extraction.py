"""Reading the program out of a code-writing reply (``agents.base.extract_code``)."""

from __future__ import annotations

import pytest

from codeforest.agents.base import extract_code

LOOP = "def best(arr):\n    top = 0\n    for x in arr:\n        top = max(top, x)\n    return top"


def test_a_json_block_before_the_code_does_not_shift_the_fences():
    # A reply of this shape (LDB's JSON answer echoed, then code blocks, the last one cut off) once read the text
    # between a closing fence and the next opening one as the program.
    reply = ('Analysis:\n```json\n{"block": "BLOCK-0", "correct": "True"}\n```\n\nThought: loop over it.\n\n'
             f"```python\n{LOOP}\n```\n\nThought: loop over it.\n\n```python\ndef best(arr):\n    \"\"\"Cut")
    assert extract_code(reply, "best") == LOOP


@pytest.mark.parametrize("fence", ["```python", "```Python", "``` python ", "```py", "```python3", "```"])
def test_python_and_unlabelled_fences_hold_code(fence):
    assert extract_code(f"Here:\n{fence}\n{LOOP}\n```\nDone.", "best") == LOOP


def test_other_languages_are_not_code():
    reply = f"```text\nnot python at all, and longer than the program below it by quite a margin\n```\n```\n{LOOP}\n```"
    assert extract_code(reply) == LOOP
    assert extract_code("```json\n{\"a\": 1}\n```") is None


def test_the_block_defining_the_entry_point_wins_over_a_longer_one():
    helper = "def helper(values):\n    " + "\n    ".join(f"v{i} = {i}" for i in range(10)) + "\n    return values"
    assert extract_code(f"```python\n{helper}\n```\n```python\n{LOOP}\n```", "best") == LOOP


def test_bare_code_is_read_and_prose_is_not():
    assert extract_code(LOOP) == LOOP
    assert extract_code("I cannot solve this.") is None
