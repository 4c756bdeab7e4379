"""A tiny OpenAI-compatible HTTP endpoint serving scripted replies after a delay, failing on cue.

It stands in for a model where only the plumbing is measured or tested: unit tests (scripted replies and
faults) and ``codeforest bench-concurrency`` (every call answered after a fixed delay, with as many calls
in flight as the client sends; ``any_role_reply`` gives every role something it can read).

Faults, one per request while any are queued (``faults``) or on every request (``always``):
``"500"`` (any status code; the error message echoes the request's ``Authorization`` header, as a careless
proxy might), ``"drop"`` (close the connection without an answer), ``"stall"`` (answer
after ``stall_s`` seconds), ``"badjson"`` (a 200 whose body is not JSON), ``"length"`` (the next reply, marked
as cut off at the output limit), ``None`` (answer normally). A faulty request consumes no reply, except "length".
A request asking for ``logprobs`` gets them in the shape llama.cpp's server gives (``token_logprobs``).
"""

from __future__ import annotations

import base64
import json
import re
import socket
import struct
import threading
import time

from codeforest.local_http import JsonHandler, LocalServer


class ScriptedEndpoint(LocalServer):
    """Serves /v1/chat/completions from a list of replies (or ``respond(body)``); records each request."""

    def __init__(self, replies: list[str], delay: float = 0.0, faults: list[str | None] | None = None,
                 always: str | None = None, stall_s: float = 30.0, respond=None, embed=None):
        self.replies = list(replies)
        self.delay = delay
        self.faults = list(faults or [])
        self.always = always
        self.stall_s = stall_s
        self.respond = respond  # optional: a function of the request body returning the reply text
        self.embed = embed  # optional: a function of a list of texts returning their vectors (/v1/embeddings)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.failed = 0
        self.in_flight = 0
        self.peak_in_flight = 0  # the most requests in their delay at once
        self._lock = threading.Lock()
        fake = self

        class Handler(JsonHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.rstrip("/").endswith("/embeddings"):
                    return self.send_json(200, fake.embeddings(body))
                with fake._lock:
                    fake.in_flight += 1
                    fake.peak_in_flight = max(fake.peak_in_flight, fake.in_flight)
                time.sleep(fake.delay)
                with fake._lock:
                    fake.in_flight -= 1
                    fault = fake.faults.pop(0) if fake.faults else fake.always
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                    if fault is not None:
                        fake.failed += 1
                if fault is not None and fake._fail(self, fault):
                    return
                with fake._lock:
                    if fake.respond is not None:
                        text = fake.respond(body)
                    else:
                        text = fake.replies.pop(0) if fake.replies else "no more replies"
                choice = {"index": 0, "finish_reason": "length" if fault == "length" else "stop",
                          "message": {"role": "assistant", "content": text}}
                if body.get("logprobs"):
                    choice["logprobs"] = token_logprobs(text)
                payload = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
                    "choices": [choice],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                }).encode()
                self.send_json(200, payload)

        self._handler = Handler
        self.serve(Handler)

    def embeddings(self, body: dict) -> bytes:
        """An embeddings reply, as floats or, as the OpenAI client asks by default, base64 float32."""
        if self.embed is None:
            return json.dumps({"error": {"message": "this endpoint serves no embeddings"}}).encode()
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        self.requests.append(body)
        vectors = self.embed(texts)
        if body.get("encoding_format") == "base64":
            vectors = [base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return json.dumps({"object": "list", "data": data, "model": body.get("model", "fake"),
                           "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()

    def _fail(self, handler: JsonHandler, fault: str) -> bool:
        """Answer with the fault; False when the request should then be answered normally (a stall)."""
        if fault.isdigit():
            echoed = handler.headers.get("Authorization", "no credentials")
            handler.send_json(int(fault), json.dumps({"error": {"message": f"injected {fault} for {echoed}"}}).encode())
        elif fault == "drop":
            handler.connection.shutdown(socket.SHUT_RDWR)
            handler.close_connection = True
        elif fault == "badjson":
            handler.send_json(200, b"<html>upstream proxy error</html>")
        elif fault == "stall":
            time.sleep(self.stall_s)
            return False
        elif fault == "length":
            return False
        else:
            raise ValueError(f"unknown fault {fault!r}")
        return True


_TOKEN = re.compile(r"\s*\S+|\s+")


def token_logprobs(text: str) -> dict:
    """A reply's ``logprobs`` as llama.cpp's server shapes them when asked: one entry per token (here a word with
    the white space before it), each its own single top choice at log-probability 0."""
    def entry(token: str) -> dict:
        return {"id": 0, "token": token, "bytes": list(token.encode()), "logprob": 0.0}
    return {"content": [{**entry(t), "top_logprobs": [entry(t)]} for t in _TOKEN.findall(text)]}


_ENTRY = re.compile(r"^\s*def\s+(\w+)\s*\(", re.M)


def schema_instance(schema: dict) -> object:
    """A middling value a JSON schema accepts: objects with their required keys, arrays as long as allowed (up
    to 3), numbers halfway between their bounds, false, and "x" for text."""
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {key: schema_instance(props.get(key, {})) for key in schema.get("required", props)}
    if kind == "array":
        return [schema_instance(schema.get("items", {}))] * max(1, schema.get("minItems", 1),
                                                                 min(3, schema.get("maxItems", 1)))
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", 0), schema.get("maximum", 1)
        return (low + high) // 2 if kind == "integer" else (low + high) / 2
    if kind == "boolean":
        return False
    return "x"


def any_role_reply(body: dict) -> str:
    """A reply every role can read: JSON for a schema, else numbered ideas and a program that fails.

    The program defines the prompt's entry point (or reads stdin) and returns nothing useful, so a search
    runs to its budget: the number of calls is then fixed by the method, not by luck.
    """
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return json.dumps(schema_instance(response_format["json_schema"]["schema"]))
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    names = _ENTRY.findall(text)
    program = f"def {names[-1]}(*args, **kwargs):\n    return None" if names else "print(input())"
    return ("1. Handle the input element by element.\n2. Sort the input first, then scan it once.\n"
            f"Step 1: Read the input.\n```python\n{program}\n```\n0")
