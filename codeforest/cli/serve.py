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
    serve.add_argument("--n-ctx", type=int, default=8192, help="the context of one request")
    serve.add_argument("--slots", type=int, default=1,
                       help="requests answered at a time (each with --n-ctx); several clients share the model")
    serve.add_argument("--verbose", action="store_true", help="show llama.cpp's log")
    serve.set_defaults(func=cmd_serve)
    recorder = sub.add_parser(
        "recorder", help="a record/replay model endpoint, to run two programs on the same replies",
        description="Record: forward every chat completion to --upstream and log it with its reply. Replay (no "
                    "--upstream): answer from the log, by the request's messages and sampling settings, a prompt "
                    "asked again getting its next recorded reply; a request the log cannot answer is logged with a "
                    "diff against the nearest recorded one and answered with an error (HTTP 422).")
    recorder.add_argument("--log", required=True, help="the JSONL log of requests and replies")
    recorder.add_argument("--upstream", help="record: the model endpoint to forward to (e.g. http://127.0.0.1:8080/v1)")
    recorder.add_argument("--api-key-env", help="record: the variable holding the upstream's API key")
    recorder.add_argument("--misses", help="replay: where misses go (default: LOG's name + .misses.jsonl)")
    recorder.add_argument("--delay", type=float, default=0.0, help="seconds before each reply (a fixed model time)")
    recorder.add_argument("--port", type=int, default=8090, help="port on 127.0.0.1 (0 = any free port)")
    recorder.add_argument("--timeout", type=float, default=3600.0,
                          help="record: seconds to wait for the model's reply (a late one is answered 504, not logged)")
    recorder.set_defaults(func=cmd_recorder)


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the embedded model on 127.0.0.1 until interrupted."""
    from codeforest.tools.models import EmbeddedServer, ModelError, resolve_gguf, tuning_from_env

    gguf = resolve_gguf(args.model, progress=err.print)
    if gguf is None:
        raise ModelError(f"{args.model!r} is not an embedded model name or a .gguf file")
    tuning = tuning_from_env()  # the settings solve and bench give their own server
    err.print(f"Loading {gguf.name} with llama.cpp settings {json.dumps(tuning)} ...")
    if args.slots < 1:
        raise ModelError(f"--slots is at least 1, not {args.slots}")
    server = EmbeddedServer(gguf, port=args.port, n_ctx=args.n_ctx * args.slots, slots=args.slots,
                            verbose=args.verbose, tuning=tuning).start()
    err.print(f"Serving an OpenAI-compatible API at [bold]{server.base_url}/v1[/bold] (model {gguf.stem}); "
              "Ctrl-C stops it.")
    err.print(f"Use it with:  codeforest solve --base-url {server.base_url}/v1 --model {gguf.stem} ...")
    _wait()
    server.stop()
    return 0


def cmd_recorder(args: argparse.Namespace) -> int:
    """Record or replay model calls on 127.0.0.1 until interrupted."""
    import os

    from codeforest.recorder import Recorder

    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    with Recorder(args.log, upstream=args.upstream, api_key=key, misses=args.misses, delay=args.delay,
                  port=args.port, timeout=args.timeout) as recorder:
        mode = f"recording calls to {args.upstream} into" if args.upstream else \
            f"replaying {sum(map(len, recorder.replies.values()))} recorded replies from"
        err.print(f"Serving at [bold]{recorder.url}[/bold], {mode} {args.log}; Ctrl-C stops it.")
        _wait()
        err.print(f"answered {recorder.answered}, missed {recorder.missed}"
                  + (f" (see {recorder.misses})" if recorder.missed else ""))
    return 0


def _wait() -> None:
    """Block until SIGTERM or Ctrl-C, waking in steps so Ctrl-C's handler runs."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
