"""What the ``codeforest`` commands share: the error console, the number types, the model and sandbox flags."""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from codeforest.model_names import counted_name

if TYPE_CHECKING:  # a command imports what it runs when it runs: --help stays quick
    from codeforest.context import Context

err = Console(stderr=True, highlight=False, soft_wrap=True)

SETTINGS_EPILOG = ("Every other setting (a graph's own, such as gvr_rollouts, verifier, codetree_evaluator; see the "
                   "documentation's Settings page: mkdocs serve, then http://127.0.0.1:8000/reference/settings/) "
                   "comes from the environment as CODEFOREST_<FIELD>, e.g. CODEFOREST_VERIFIER=http "
                   "CODEFOREST_VERIFIER_URL=http://127.0.0.1:9000/score")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def role_names() -> list[str]:
    """The role names ``--role`` takes."""
    from codeforest.roles import ROLE_NAMES

    return list(ROLE_NAMES)


def role_option(text: str) -> tuple[str, dict]:
    """An argparse type: ``ROLE=MODEL[@URL]`` (a URL after the last '@' that starts one)."""
    import re

    found = re.fullmatch(r"\s*([a-z_]+)\s*=\s*(.+?)(?:@(https?://\S+))?\s*", text)
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} is not ROLE=MODEL[@URL], e.g. critic=local or "
                                         "critic=gpt-4o-mini@https://api.openai.com/v1")
    role, model, url = found.groups()
    if role not in role_names():
        raise argparse.ArgumentTypeError(f"unknown role {role!r}; the roles: {', '.join(role_names())}")
    return role, {"model": model, "base_url": url or ""}


def price_option(text: str) -> tuple[str, tuple[float, float]]:
    """An argparse type: ``MODEL=IN[,OUT]``, prices per million tokens (one number: input and output alike)."""
    model, sep, numbers = text.rpartition("=")
    try:
        values = [float(n) for n in numbers.split(",")]
    except ValueError:
        values = []
    if not sep or not model.strip() or len(values) not in (1, 2) or any(v < 0 or v != v for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} is not MODEL=IN[,OUT] with prices of at least 0, e.g. "
                                         "gpt-4o-mini=0.15,0.6")
    return counted_name(model.strip()), (values[0], values[-1])


def read_prices(path: str) -> dict[str, tuple[float, float]]:
    """A JSON price table file: ``{model: [input, output]}`` or ``{model: price}`` per million tokens."""
    import json

    try:
        table = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"--prices {path}: not a readable JSON file ({exc})") from None
    if not isinstance(table, dict):
        raise ValueError(f"--prices {path}: expected an object {{model: [input, output]}}")
    prices = {}
    for model, price in table.items():
        given = price if isinstance(price, list) else [price]
        if len(given) not in (1, 2) or not all(isinstance(v, int | float) and v >= 0 for v in given):
            raise ValueError(f"--prices {path}: {model!r} needs [input, output] prices of at least 0, not {price!r}")
        prices[counted_name(model)] = (float(given[0]), float(given[-1]))
    return prices


def first_few(names: list[str], shown: int = 5) -> str:
    """Up to ``shown`` names, comma-separated, then ``...`` when there are more."""
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")


MAX_SECONDS = 1_000_000  # the runner's alarms and CPU limits take whole seconds in C integers


def seconds(text: str) -> float:
    """An argparse type: a time limit in seconds, above 0 and at most ``MAX_SECONDS``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= MAX_SECONDS:  # also false for nan
        raise argparse.ArgumentTypeError(f"must be above 0 and at most {MAX_SECONDS:,} seconds, not {text}")
    return value


def iso_date(text: str) -> str:
    """An argparse type: a day as ``YYYY-MM-DD``."""
    import datetime

    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date as YYYY-MM-DD") from None


def positive_ints(text: str) -> list[int]:
    """An argparse type: comma-separated whole numbers of at least 1, e.g. ``1,8,32``."""
    values = sorted({positive_int(part.strip()) for part in text.split(",") if part.strip()})
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r} holds no number; give e.g. 1,8,32")
    return values


def dataset_label(dataset: str) -> str:
    """How a dataset is named in records and folders: its name, or a data file's stem."""
    return Path(dataset).stem if dataset.endswith((".jsonl", ".json")) else dataset


def add_cache_arg(p: argparse.ArgumentParser, default: str) -> None:
    """--cache [PATH]: keep the model's responses in an SQLite file (``default`` says where without PATH)."""
    p.add_argument("--cache", nargs="?", const="", metavar="PATH",
                   help=f"cache model responses in an SQLite file (default: {default})")


def add_context_args(p: argparse.ArgumentParser, *, search: bool = True, selector: bool = True,
                     data: bool = True) -> None:
    """The model and prompt flags; ``search``: also the sandbox's, and the selector's unless ``selector`` is False;
    ``data``: --data-dir."""
    p.add_argument("--model", help="local (embedded 1.5B, default), small (embedded 0.5B), a .gguf path, "
                                   "or a model name at --base-url")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1")
    p.add_argument("--api-key-env", help="environment variable holding the endpoint's key")
    p.add_argument("--temperature", type=float, help="sampling temperature, 0 to 2 (default 0, as the papers)")
    p.add_argument("--max-tokens", type=int, help="output tokens of every call (default 0: each role's own limit)")
    p.add_argument("--request-timeout", type=seconds, help="seconds to wait for one model call (default 600)")
    p.add_argument("--retries", type=int, help="retries of a failed model call, with backoff (default 2)")
    p.add_argument("--prompts-dir", help="folder of prompt YAML files overriding the packaged ones")
    if search:
        p.add_argument("--sandbox", choices=["local", "e2b"],
                       help="where generated code runs (default: $CODEFOREST_SANDBOX, else local)")
        p.add_argument("--timeout", dest="test_timeout", type=seconds, help="seconds per public test")
        p.add_argument("--role", action="append", metavar="ROLE=MODEL[@URL]", type=role_option,
                       help="a role's own model (repeatable), embedded without @URL: e.g. critic=local, "
                            "judge=gpt-4o-mini@https://api.openai.com/v1; the roles: " + ", ".join(role_names()))
        p.add_argument("--price", action="append", metavar="MODEL=IN[,OUT]", type=price_option,
                       help="price per million input and output tokens of a model (repeatable; default: a model "
                            "naming its size, such as the embedded ones, costs its billions of parameters)")
        p.add_argument("--prices", metavar="FILE", help="a JSON price table: {\"model\": [input, output], ...}")
    if search and selector:
        p.add_argument("--selector", choices=["public", "agreement", "codet", "differential"],
                       help="how the final program is chosen among the search's programs (default: public, the "
                            "paper's)")
        p.add_argument("--min-candidates", type=positive_int,
                       help="public-passing programs to collect before a search stops (default 1)")
        p.add_argument("--selector-model", help="the model the Tester and the judge use (default: --model), "
                                                "at --selector-base-url or embedded")
        p.add_argument("--selector-base-url", help="OpenAI-compatible endpoint of --selector-model")
        p.add_argument("--selector-api-key-env", help="environment variable holding that endpoint's key")
    if data:
        p.add_argument("--data-dir", help="benchmark folder (default: $CODEFOREST_DATA or ../shared/data)")


def context_from_args(args: argparse.Namespace) -> Context:
    """A Context from the CLI flags that were given (others: env or defaults)."""
    from codeforest.context import Context
    from codeforest.prompts import check_prompts_dir

    given = {k: getattr(args, k) for k in ("model", "base_url", "api_key_env", "temperature", "max_tokens",
                                           "request_timeout", "retries", "sandbox", "test_timeout", "prompts_dir",
                                           "selector", "min_candidates", "selector_model", "selector_base_url",
                                           "selector_api_key_env")
             if getattr(args, k, None) is not None}
    if getattr(args, "role", None):  # on top of CODEFOREST_ROLES, role by role
        given["roles"] = {**Context().roles, **dict(args.role)}
    prices = read_prices(args.prices) if getattr(args, "prices", None) else {}
    prices.update(getattr(args, "price", None) or [])
    if prices:
        given["prices"] = {**Context().prices, **prices}
    context = Context(**given)
    if context.prompts_dir:
        check_prompts_dir(context.prompts_dir)  # a broken prompt file fails before the model is loaded
    return context


def prepare_models(context: Context, graphs: list[str], slots: int = 1) -> None:
    """Before the first problem: each embedded model the run calls (the search model, and the model of every role
    entry a graph calls) found or downloaded, a missing .gguf an error; their servers get at least ``slots`` slots."""
    from codeforest.registry import graph_roles
    from codeforest.tools.models import local_model_file

    called = set().union(*(graph_roles(graph, context) for graph in graphs))
    embedded = sorted({run.model for run in context.model_contexts(called) if not run.base_url})
    if embedded:
        context.server_slots = max(context.server_slots, slots)
    for model in embedded:
        local_model_file(model, progress=err.print)


def note_single_candidate(context: Context) -> None:
    """Point out a selector that will mostly have one program to choose from (solve and bench only)."""
    if context.selector != "public" and context.min_candidates == 1:
        err.print(f"[yellow]note:[/yellow] selector {context.selector} with min_candidates 1: searches that stop at "
                  "their first public-passing program (resample, codetree, bester, reflexion, rpm_mcts) leave it "
                  "one candidate then; raise --min-candidates to give it a choice (e.g. resample_n for resample)")


@contextlib.contextmanager
def heartbeat(watched, show, *, live: bool, every_s: float = 2.0, log_every_s: float = 600.0):
    """While a bench (or anything with ``in_flight()`` in its shape) runs, call ``show`` to refresh the bar (a
    terminal), or, when the log is a file, print what is running every ``log_every_s``: a search can take an hour
    between two finished problems."""
    from codeforest.bench import in_flight_line

    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every_s if live else log_every_s):
            if live:
                show()
            elif running := watched.in_flight():
                err.print(f"{time.strftime('%H:%M:%S')} in flight: {in_flight_line(running)}")

    thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
