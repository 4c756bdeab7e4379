"""A tiny OpenAI-compatible HTTP endpoint serving scripted replies (for CLI tests without a model)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    """Serves /v1/chat/completions from a list of replies; records each request body and headers."""

    def __init__(self, replies: list[str], delay: float = 0.0):
        self.replies = list(replies)
        self.delay = delay
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(fake.delay)
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                text = fake.replies.pop(0) if fake.replies else "no more replies"
                payload = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
