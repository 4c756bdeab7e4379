"""A record/replay model endpoint (OpenAI-compatible, on 127.0.0.1) for running two programs on the same replies.

In record mode it forwards each chat completion to a model endpoint and logs the request with its reply; in replay
mode it answers from such a log. A reply is found by the request's messages and sampling settings (``REPLAY_KEYS``:
not the model name, time-outs or the client's bookkeeping), and a prompt asked several times gets its recorded
replies in order. A request the log cannot answer is a miss: it is logged with the nearest recorded prompt and a
diff against it, and answered with an error, so a search stops at its first divergence instead of inventing one.
"""

from __future__ import annotations

import difflib
import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path

from codeforest.jsonl import append_record, read_records
from codeforest.local_http import JsonHandler, LocalServer
from codeforest.tools.cache import model_file_name

REPLAY_KEYS = ("messages", "temperature", "top_p", "n", "stop", "max_tokens")
DEFAULTS = {"temperature": 1.0, "top_p": 1.0, "n": 1, "stop": None, "max_tokens": None}  # OpenAI's, when left out
MISS_STATUS = 422  # a status OpenAI clients and codeforest do not retry: a retry would miss the same way


def replay_key(body: dict) -> str:
    """The key a request's reply is recorded and found under: its messages and sampling settings, with OpenAI's
    defaults for those left out, and ``max_completion_tokens`` read as ``max_tokens``."""
    settings = {**DEFAULTS, **{k: body[k] for k in REPLAY_KEYS if body.get(k) is not None}}
    for name in ("temperature", "top_p"):  # 0 and 0.0 are one setting (Python clients send either)
        settings[name] = float(settings[name])
    if body.get("max_completion_tokens") is not None and body.get("max_tokens") is None:
        settings["max_tokens"] = body["max_completion_tokens"]
    if isinstance(settings["stop"], str):
        settings["stop"] = [settings["stop"]]
    messages = [{"role": m.get("role"), "content": _text(m.get("content"))} for m in body.get("messages", [])]
    return json.dumps({**settings, "messages": messages}, sort_keys=True, ensure_ascii=False)


def _portable(message: dict) -> dict:
    """A request or reply as logged: a model named by its path (the embedded server's) by its file name only, so no
    home folder is kept."""
    return {**message, "model": model_file_name(message["model"])} if "model" in message else message


def _text(content) -> str:
    if isinstance(content, list):  # content parts: the text ones, in order
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def prompt_text(key: str) -> str:
    """A recorded request as text for a person: its settings, then each message under its role."""
    request = json.loads(key)
    head = ", ".join(f"{k}={request[k]}" for k in REPLAY_KEYS if k != "messages")
    return "\n".join([head, *(f"[{m['role']}]\n{m['content']}" for m in request["messages"])])


def nearest(key: str, recorded: list[str]) -> tuple[str | None, str]:
    """The recorded request closest to ``key`` (by the text of its messages and settings) and a unified diff
    from it to ``key``; ``(None, "")`` when nothing is recorded."""
    if not recorded:
        return None, ""
    text = prompt_text(key)
    best = max(recorded, key=lambda other: difflib.SequenceMatcher(None, prompt_text(other), text,
                                                                   autojunk=False).quick_ratio())
    diff = difflib.unified_diff(prompt_text(best).splitlines(), text.splitlines(), "recorded", "asked", lineterm="")
    return best, "\n".join(diff)


class Recorder(LocalServer):
    """The endpoint: ``upstream`` set, it records to ``log`` (answering first from what the log already holds, so a
    recording stopped half-way resumes where it stopped); else it replays ``log``, misses going to ``misses``
    (default: beside the log). ``delay`` seconds pass before each reply (a fixed model time, to compare the wall
    time of two programs on the same replies)."""

    def __init__(self, log: str | Path, *, upstream: str | None = None, api_key: str | None = None,
                 misses: str | Path | None = None, delay: float = 0.0, port: int = 0, timeout: float = 3600.0):
        self.log, self.upstream, self.api_key, self.delay = Path(log), upstream, api_key, delay
        self.misses = Path(misses) if misses else self.log.with_name(self.log.stem + ".misses.jsonl")
        self.timeout = timeout
        self.replies: dict[str, deque] = defaultdict(deque)
        self.answered = self.missed = 0
        self.trace: list[tuple[str, bool]] = []  # every request's key, and whether the log answered it
        self._lock = threading.Lock()
        records, _ = read_records(self.log) if self.log.is_file() else ([], 0)
        for record in records:  # keyed again from the request: a log keeps working when the key's rule is refined
            self.replies[replay_key(record["request"])].append(record["response"])
        self._recorded = list(self.replies)
        recorder = self

        class Handler(JsonHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self.send_json(200, {"object": "list", "data": [{"id": "recorded", "object": "model"}]})
                else:
                    self.send_json(404, {"error": {"message": f"no {self.path} here"}})

            def do_POST(self):  # noqa: N802
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self.send_json(404, {"error": {"message": f"no {self.path} here"}})
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if body.get("stream"):
                    return self.send_json(400, {"error": {"message": "the recorder answers whole replies only "
                                                                     "(stream=false)"}})
                status, payload = recorder.answer(body, client_gone=self.client_gone)
                time.sleep(recorder.delay)
                self.send_json(status, payload)

        self.serve(Handler, port)

    def answer(self, body: dict, client_gone: Callable[[], bool] = lambda: False) -> tuple[int, dict]:
        """The HTTP status and JSON body for one chat completion request. A reply that comes after its client
        stopped waiting is not recorded: the client asks again, and a log holding both replies would answer the
        second asking with the first, which that client never saw."""
        key = replay_key(body)
        with self._lock:
            queue = self.replies.get(key)
            self.trace.append((key, bool(queue)))
            if queue:
                self.answered += 1
                return 200, queue.popleft()
            if self.upstream is None:
                self.missed += 1
                near, diff = nearest(key, self._recorded)
                append_record(self.misses, {"key": key, "request": _portable(body), "nearest": near, "diff": diff,
                                            "used_up": key in self.replies})
        if self.upstream is not None:
            status, response = self._forward(body)
            if status == 200 and not client_gone():
                with self._lock:
                    append_record(self.log, {"key": key, "request": _portable(body), "response": _portable(response)})
                    self.answered += 1
            return status, response
        reason = "every recorded reply to this request was used" if key in self.replies else \
            "no recorded request matches"
        return MISS_STATUS, {"error": {"message": f"replay miss: {reason} (see {self.misses})", "type": "replay_miss"}}

    def _forward(self, body: dict) -> tuple[int, dict]:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = httpx.post(self.upstream.rstrip("/") + "/chat/completions", json=body, headers=headers,
                                  timeout=self.timeout)
        except httpx.TimeoutException:
            return 504, {"error": {"message": f"the model endpoint gave no reply within {self.timeout:g} s "
                                              "(codeforest recorder --timeout); nothing was recorded"}}
        except httpx.HTTPError as error:
            return 502, {"error": {"message": f"the model endpoint could not be reached: {error}"}}
        try:
            return response.status_code, response.json()
        except ValueError:
            return 502, {"error": {"message": f"the model endpoint answered {response.status_code} without JSON"}}
