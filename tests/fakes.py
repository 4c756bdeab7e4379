"""Scripted chat models for unit tests of graph logic."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from contextlib import contextmanager

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


class ScriptedChatModel(BaseChatModel):
    """Replies from a script, in order; records every prompt it was given.

    A script item is a string or an AIMessage (e.g. with tool calls), or a function of the messages
    returning one.
    """

    script: list = Field(default_factory=list)
    calls: list = Field(default_factory=list)
    prompt_tokens: int = 10
    completion_tokens: int = 5

    @classmethod
    def of(cls, *replies: str | Callable[[list[BaseMessage]], str]) -> ScriptedChatModel:
        return cls(script=list(replies))

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls.append(messages)
        if not self.script:
            raise AssertionError(f"the script ran out after {len(self.calls) - 1} calls")
        item = self.script.pop(0)
        reply = item(messages) if callable(item) else item
        usage = {"input_tokens": self.prompt_tokens, "output_tokens": self.completion_tokens,
                 "total_tokens": self.prompt_tokens + self.completion_tokens}
        if isinstance(reply, AIMessage):
            return ChatResult(generations=[ChatGeneration(message=reply.model_copy(update={"usage_metadata": usage}))])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply, usage_metadata=usage))])

    def bind_tools(self, tools, **kwargs):
        """The script already knows which tools it calls."""
        return self

    def texts(self) -> Iterable[str]:
        """Every message text the model has seen."""
        for call in self.calls:
            for message in call:
                yield str(message.content)


def code_reply(code: str) -> str:
    return f"Here is the solution:\n```python\n{code}\n```\n"


class RespondingChatModel(BaseChatModel):
    """Answers every call with ``respond(messages)`` (which may raise); records the calls."""

    respond: Callable
    calls: list = Field(default_factory=list)
    call_kwargs: list = Field(default_factory=list)  # what each call was bound with (temperature, seed)
    pass_kwargs: bool = False  # True: ``respond(messages, **kwargs)``

    @property
    def _llm_type(self) -> str:
        return "responding"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls.append(messages)
        self.call_kwargs.append({**kwargs, **({"stop": stop} if stop else {})})
        text = self.respond(messages, **kwargs) if self.pass_kwargs else self.respond(messages)
        usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        texts = text if isinstance(text, list) else [text]  # a list: several choices (a request's ``n``)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(t, usage_metadata=usage)) for t in texts])


class RoleScript:
    """Replies per role, in order: the role of a call is the first of ``roles`` (marker, role) whose marker is in
    its text. Records the roles called and every prompt."""

    def __init__(self, roles: list[tuple[str, str]], **replies):
        self.markers = roles
        self.replies = {k: list(v) for k, v in replies.items()}
        self.roles: list[str] = []
        self.prompts: dict[str, list[str]] = {}

    def __call__(self, messages):
        text = "\n".join(str(m.content) for m in messages)
        role = next(r for key, r in self.markers if key in text)
        self.roles.append(role)
        self.prompts.setdefault(role, []).append(text)
        assert self.replies.get(role), f"no scripted reply left for {role}"
        return self.replies[role].pop(0)


def thought_list(*pairs) -> str:
    """RethinkMCTS / CodePRM's JSON list of thoughts with their Reasonableness."""
    import json

    return json.dumps([{f"Thought-{i + 1}": t, "Reasonableness": p} for i, (t, p) in enumerate(pairs)])


class InFlight:
    """Counts calls in flight: ``peak``, the most at once, and ``threads``, the threads that made them. The calls
    numbered in ``gather`` (from 1, in order of arrival) each wait until the last of them has arrived, so calls
    sent together are seen together however slow the machine; if that takes ``gather_s``, no call waits longer."""

    def __init__(self, gather: range = range(0), gather_s: float = 10.0):
        self.gather, self.gather_s = gather, gather_s
        self.active = self.peak = self.arrived = 0
        self.threads: set[int] = set()
        self._open = False
        self._lock = threading.Condition()

    @contextmanager
    def call(self):
        """One call, counted while it runs."""
        with self._lock:
            self.arrived += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.threads.add(threading.get_ident())
            self._lock.notify_all()
            if self.arrived in self.gather and not self._lock.wait_for(
                    lambda: self._open or self.arrived >= self.gather[-1], timeout=self.gather_s):
                self._open = True  # they were not sent together: let every call go on
                self._lock.notify_all()
        try:
            yield
        finally:
            with self._lock:
                self.active -= 1


# A code reply of two python blocks defining ``inc``: the first is right once the released HumanEval executor's import
# lines come before it (it uses ``math`` unimported), the longer second one, codeforest's own reading, is wrong.
TWO_BLOCKS = ("```python\ndef inc(x):\n    return math.floor(x) + 1\n```\nOr, longer:\n"
              "```python\ndef inc(x):\n    shifted = x\n    return shifted + 2\n```")
