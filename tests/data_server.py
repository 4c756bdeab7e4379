"""A local HTTP server on 127.0.0.1 that plays the dataset sources: GitHub raw paths and release assets behind
``$CODEFOREST_DATA_MIRROR`` (``/raw.githubusercontent.com/...``, ``/github.com/...``), and the hub's resolve URLs
behind ``$HF_ENDPOINT`` (``/datasets/<repo>/resolve/<revision>/<file>``, HEAD and GET)."""

from __future__ import annotations

import hashlib
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"
_HUB = re.compile(r"^/datasets/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")


class DataServer:
    """Serves ``files`` (URL path -> bytes); ``drop_first`` paths send half their bytes then hang up, once."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.drop_first: set[str] = set()
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def _answer(self, body: bool):
                server.requests.append((self.command, self.path, self.headers.get("Range")))
                path, extra = self.path, {}
                hub = _HUB.match(path)
                if hub:
                    path = f"/hub/{hub['repo']}/{hub['file']}"
                    extra = {"X-Repo-Commit": HUB_COMMIT}
                data = server.files.get(path)
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = 0
                ranged = re.match(r"bytes=(\d+)-$", self.headers.get("Range") or "")
                if ranged and body:
                    start = int(ranged[1])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                if not body:
                    return
                if path in server.drop_first and not start:
                    server.drop_first.discard(path)
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data[start:])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> DataServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def serve_github(self, repo: str, ref: str, path: str, data: bytes) -> None:
        """Serve a file as raw.githubusercontent.com does, behind the mirror."""
        self.files[f"/raw.githubusercontent.com/{repo}/{ref}/{path}"] = data

    def serve_release(self, repo: str, tag: str, asset: str, data: bytes) -> None:
        """Serve a release asset as github.com does, behind the mirror."""
        self.files[f"/github.com/{repo}/releases/download/{tag}/{asset}"] = data

    def serve_hub(self, repo: str, file: str, data: bytes) -> None:
        """Serve a hub dataset file at every revision (resolving to ``HUB_COMMIT``)."""
        self.files[f"/hub/{repo}/{file}"] = data
