"""A tiny OpenAI-compatible HTTP endpoint serving scripted replies, failing on cue (tests without a model).

Faults, one per request while any are queued (``faults``) or on every request (``always``):
``"500"`` (any status code), ``"drop"`` (close the connection without an answer), ``"stall"`` (answer
after ``stall_s`` seconds), ``"badjson"`` (a 200 whose body is not JSON), ``None`` (answer normally).
A faulty request consumes no reply.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    """Serves /v1/chat/completions from a list of replies; records each request body and headers."""

    def __init__(self, replies: list[str], delay: float = 0.0, faults: list[str | None] | None = None,
                 always: str | None = None, stall_s: float = 30.0, respond=None):
        self.replies = list(replies)
        self.delay = delay
        self.faults = list(faults or [])
        self.always = always
        self.stall_s = stall_s
        self.respond = respond  # optional: a function of the request body returning the reply text
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.failed = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(fake.delay)
                with fake._lock:
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
                payload = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                }).encode()
                self._send(200, payload)

            def _send(self, status: int, payload: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a stalled answer

            def log_message(self, *args):
                pass

        self._handler = Handler
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _fail(self, handler: BaseHTTPRequestHandler, fault: str) -> bool:
        """Answer with the fault; False when the request should then be answered normally (a stall)."""
        if fault.isdigit():
            handler._send(int(fault), json.dumps({"error": {"message": f"injected {fault}"}}).encode())
        elif fault == "drop":
            handler.connection.shutdown(socket.SHUT_RDWR)
            handler.close_connection = True
        elif fault == "badjson":
            handler._send(200, b"<html>upstream proxy error</html>")
        elif fault == "stall":
            time.sleep(self.stall_s)
            return False
        else:
            raise ValueError(f"unknown fault {fault!r}")
        return True

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
