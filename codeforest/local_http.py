"""The small JSON-over-HTTP servers codeforest runs on 127.0.0.1 (the scripted endpoint, the recorder): a handler
that answers JSON quietly and a server that starts in a thread and stops with its ``with`` block."""

from __future__ import annotations

import json
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler that answers JSON and logs nothing."""

    def send_json(self, status: int, payload: dict | bytes) -> None:
        """Answer ``status`` with ``payload`` (a dict, or bytes sent as they are)."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting

    def client_gone(self) -> bool:
        """Whether the client has closed its connection (it stopped waiting for the reply)."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        try:
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def log_message(self, *args):
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default 5 drops connections when many calls arrive at once


class LocalServer:
    """A threading HTTP server on 127.0.0.1 serving ``handler`` from a daemon thread; ``url`` is its /v1 base."""

    def serve(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        """Start serving."""
        self.server = _Server(("127.0.0.1", port), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()
