"""Process reward models as a tool: the scorer protocol, CodePRM's input string, and a PRM behind HTTP.

A ``PRMScorer`` gives one score in [0, 1] per thought of a chain, from the problem, the thoughts, the
program written from them and its public-test feedback (CodePRM, SPEC §3.3-3.4). The prompted LLM
verifier (``agents/verifier.py``) is one; ``HTTPScorer`` is a trained PRM served behind an endpoint.

The HTTP request shape (POST, JSON)::

    {"problem": str, "thoughts": [str, ...], "code": str, "feedback": str,
     "step_tag": "\\n\\n\\n\\n\\n", "input": str}

``input`` is CodePRM's exact PRM input string (``prm_input``): a served CodePRM model can tokenize it
and read its value head at each step tag, which stands there once per thought (longer runs of blank lines in
the problem, a thought, the code or the feedback are cut to three newlines). The answer is
``{"scores": [float, ...]}``, one per thought.
"""

from __future__ import annotations

import json
import re
import time
from typing import Protocol, runtime_checkable

import httpx

from codeforest.tools.redaction import redact
from codeforest.tools.stopwatch import MODEL, timed

STEP_TAG = "\n\n\n\n\n"  # CodePRM's step separator: the PRM's score is read at each
_LABEL = re.compile(r"^(\d+\s*-\s*)?thought\s*:\s*", re.IGNORECASE)  # a label the thought already carries
_BLANK_RUN = re.compile(r"\n{4,}")  # a run of newlines that could hold a step tag


def untagged(text: str) -> str:
    """``text`` with every run of four or more newlines cut to three, so that a step tag stands only where a
    step ends (a program's output of blank lines would otherwise add a score, and shift the labels)."""
    return _BLANK_RUN.sub("\n\n\n", text)


@runtime_checkable
class PRMScorer(Protocol):
    """Anything that scores each thought of a chain in [0, 1]."""

    def score(self, problem: str, thoughts: list[str], code: str, feedback: str) -> list[float]:
        """One score per thought, in order."""
        ...


class PRMError(RuntimeError):
    """A PRM endpoint that failed after its retries, or answered something that is not one score per thought."""


class PRMReplyError(PRMError):
    """A PRM reply that arrived but is not one number per thought (scored as unreadable, not a failure)."""


def prm_steps(thoughts: list[str]) -> tuple[str, str]:
    """The chain as CodePRM's training data holds it: each thought numbered ``i-Thought: ...`` (the released
    collector's and search's label), once plain before the code and once each followed by the step tag."""
    steps = [f"{i}-Thought: {untagged(_LABEL.sub('', t.strip()))}" for i, t in enumerate(thoughts, 1)]
    return "".join(f"{s}\n" for s in steps), "".join(f"{s} {STEP_TAG}" for s in steps)


def prm_input(problem: str, thoughts: list[str], code: str | None = None, feedback: str | None = None) -> str:
    """CodePRM's exact PRM input: the thoughts once before the code, then each followed by the step tag.

    Without code and feedback it is the "math-style" input of the paper's ablation: problem and tagged steps.
    """
    before, process = prm_steps(thoughts)
    if code is None:
        return f"{untagged(problem)} \n{process}"
    return f"{untagged(problem)} \n{before} \n{untagged(code)} \n{untagged(feedback or '')} \n{process}"


class HTTPScorer:
    """A trained PRM served behind ``url`` (see the module docstring for the request shape)."""

    def __init__(self, url: str, *, timeout: float = 600.0, retries: int = 2, with_execution: bool = True):
        if not url:
            raise ValueError("verifier='http' needs verifier_url (CODEFOREST_VERIFIER_URL): the PRM endpoint")
        self.url, self.timeout, self.retries, self.with_execution = url, timeout, retries, with_execution

    def score(self, problem: str, thoughts: list[str], code: str, feedback: str) -> list[float]:
        """POST the chain; the endpoint's scores, one number per thought (each clamped to [0, 1])."""
        if not self.with_execution:
            code, feedback = "", ""
        body = {"problem": problem, "thoughts": thoughts, "code": code, "feedback": feedback, "step_tag": STEP_TAG,
                "input": prm_input(problem, thoughts, code if self.with_execution else None, feedback)}
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                with timed(MODEL):  # a PRM is a model: its time is model time
                    response = httpx.post(self.url, json=body, timeout=self.timeout)
                if response.status_code >= 500 or response.status_code == 429:
                    raise PRMError(f"HTTP {response.status_code}")
                response.raise_for_status()
                payload = response.json()
                break
            except (httpx.TransportError, PRMError, json.JSONDecodeError) as exc:
                last = exc
                if attempt < self.retries:
                    time.sleep(min(8.0, 0.5 * 2 ** attempt))
            except httpx.HTTPStatusError as exc:  # 4xx: retrying will not help
                raise PRMError(f"the PRM at {redact(self.url)} refused the request: "
                               f"HTTP {exc.response.status_code}") from exc
        else:
            raise PRMError(f"the PRM at {redact(self.url)} failed after {self.retries + 1} attempts: {last}") from last
        return _scores(payload, len(thoughts))


def _scores(payload: object, count: int) -> list[float]:
    scores = payload.get("scores") if isinstance(payload, dict) else None
    if not isinstance(scores, list) or len(scores) != count:
        raise PRMReplyError(f"expected {{'scores': [{count} numbers]}}, got {str(payload)[:200]}")
    try:
        values = [float(s) for s in scores]
    except (TypeError, ValueError) as exc:
        raise PRMReplyError(f"non-numeric PRM scores: {scores[:5]}") from exc
    return [min(1.0, max(0.0, v)) for v in values]
