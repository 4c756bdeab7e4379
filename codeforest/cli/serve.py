"""``codeforest serve``: the embedded model as an OpenAI-compatible endpoint on 127.0.0.1."""

from __future__ import annotations

import argparse
import json
import signal
import threading

from codeforest.cli.common import err


def register(sub) -> None:
    """Add the serve command to the ``codeforest`` subparsers."""
    serve = sub.add_parser("serve", help="run the embedded model server in the foreground")
    serve.add_argument("--model", default="local", help="local (1.5B, default), small (0.5B) or a .gguf path")
    serve.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (0 = any free port)")
    serve.add_argument("--n-ctx", type=int, default=8192)
    serve.add_argument("--verbose", action="store_true", help="show llama.cpp's log")
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the embedded model on 127.0.0.1 until interrupted."""
    from codeforest.tools.models import EmbeddedServer, ModelError, resolve_gguf, tuning_from_env

    gguf = resolve_gguf(args.model, progress=err.print)
    if gguf is None:
        raise ModelError(f"{args.model!r} is not an embedded model name or a .gguf file")
    tuning = tuning_from_env()  # the settings solve and bench give their own server
    err.print(f"Loading {gguf.name} with llama.cpp settings {json.dumps(tuning)} ...")
    server = EmbeddedServer(gguf, port=args.port, n_ctx=args.n_ctx, verbose=args.verbose, tuning=tuning).start()
    err.print(f"Serving an OpenAI-compatible API at [bold]{server.base_url}/v1[/bold] (model {gguf.stem}); "
              "Ctrl-C stops it.")
    err.print(f"Use it with:  codeforest solve --base-url {server.base_url}/v1 --model {gguf.stem} ...")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):  # waking: Ctrl-C's handler runs in this thread only when it runs
            pass
    except KeyboardInterrupt:
        pass
    server.stop()
    return 0
