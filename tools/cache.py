"""A persistent LangChain response cache in one SQLite file.

The equivalent in ``langchain-community`` (``SQLiteCache``) lives in a package that is being sunset,
and would pull in SQLAlchemy for one table; this is that cache on the standard library's sqlite3.
Generations are stored with LangChain's own serializer, so a cache hit replays the full message.
The model key leaves out the port of a loopback endpoint: the embedded server listens on a new free
port in every process, and its answers must still be found by the next run. A cache travels between machines
(measurement folders commit theirs), so a stored answer names its model by file name, not by the local path the
embedded server reports. How a call is made (its time-out and retries) is not part of the key: an answer does not
depend on it. Entries stored before the key named each call's output limit reliably (a per-role limit set on a
copy of the model could carry the original's key) are found by their key without the limit (``legacy_key``).
Each entry keeps the seconds its call took when it was made (from the cache miss to the answer stored), and a hit
hands them back in the reply's ``response_metadata["replayed_s"]``: a run replayed from the cache can then be timed
as if it had made its calls (entries of earlier versions have none).
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
import warnings
from pathlib import Path

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.load import dumps, loads

warnings.filterwarnings("ignore", message="The function `loads` is in beta")

_LOOPBACK_PORT = re.compile(r"(https?://(?:127\.0\.0\.1|localhost|\[::1\])):\d+")
_USERINFO = re.compile(r"(https?://)[^/\s@\"]+@")
_PATH_SEP = re.compile(r"[\\/]")


_HOW_CALLED = ("request_timeout", "timeout", "max_retries")  # how a call is made, not what it answers
REPLAYED_S = "replayed_s"  # the response metadata a cache hit carries: the seconds the call took when made
_VERSION = "cache_key"  # marks a key written since the output limit in a key is exact


def _normalised(llm_string: str) -> tuple[dict | None, str]:
    """The model's serialised form without credentials, loopback port and call settings, and the text after it."""
    text = _LOOPBACK_PORT.sub(r"\1", _USERINFO.sub(r"\1", llm_string))
    head, sep, params = text.partition("---")
    try:
        model = json.loads(head)
    except json.JSONDecodeError:
        return None, text
    if not isinstance(model, dict):
        return None, text
    kwargs = model.get("kwargs")
    for name in _HOW_CALLED if isinstance(kwargs, dict) else ():
        kwargs.pop(name, None)
    return model, sep + params


def model_key(llm_string: str) -> str:
    """The model configuration as cached: no credentials in a URL, no loopback port, no time-out or retries."""
    model, rest = _normalised(llm_string)
    if model is None:
        return rest
    return json.dumps({**model, _VERSION: 2}, sort_keys=True) + rest


def legacy_key(llm_string: str) -> str:
    """The key an entry stored by an earlier version is found under: as ``model_key`` without the model's own
    output limit, which such a key could carry stale (a limit bound to the call was always right and stays)."""
    model, rest = _normalised(llm_string)
    if model is None:
        return rest
    model.pop(_VERSION, None)
    if isinstance(model.get("kwargs"), dict):
        model["kwargs"].pop("max_tokens", None)
    return json.dumps(model, sort_keys=True) + rest


def model_file_name(name):
    """A model named by a path (as the embedded server reports it) cut to its file name, so no home folder is
    stored; any other name or value as it is."""
    return _PATH_SEP.split(name)[-1] if isinstance(name, str) else name


def _with_metadata(generation, **fields):
    """A copy of a chat generation whose message's response metadata also holds ``fields``."""
    message = generation.message
    meta = {**(message.response_metadata or {}), **fields}
    return generation.model_copy(update={"message": message.model_copy(update={"response_metadata": meta})})


def portable(generation):
    """A generation as stored: a model path in its response metadata cut to the file name (no home folder)."""
    message = getattr(generation, "message", None)
    name = (getattr(message, "response_metadata", None) or {}).get("model_name")
    if not isinstance(name, str) or not _PATH_SEP.search(name):
        return generation
    return _with_metadata(generation, model_name=model_file_name(name))


def with_seconds(generation, seconds: float | None):
    """A cached generation carrying the seconds its call took when made (``REPLAYED_S``), where they are known."""
    if seconds is None or getattr(generation, "message", None) is None:
        return generation
    return _with_metadata(generation, **{REPLAYED_S: seconds})


class SQLiteResponseCache(BaseCache):
    """Responses keyed by (prompt, model configuration), kept across processes and runs."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (prompt TEXT, llm TEXT, idx INTEGER, "
                         "response TEXT, seconds REAL, PRIMARY KEY (prompt, llm, idx))")
        # a cache of an earlier version gains the column at its first new entry: a replay leaves its table as it was
        self._timed = "seconds" in {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
        self._missed: dict[tuple[str, str], float] = {}  # when each call now being made missed the cache
        self._rekey_legacy()
        self._drop_model_paths()
        self._db.commit()

    def _rekey_legacy(self) -> None:
        """Rekey entries written by earlier versions (a loopback port, time-out and retries, an output limit that
        may be stale in their key) under ``legacy_key``, so they are found again. Where two old entries meet under
        one key (e.g. a call made again after a change of time-out), the later one stays: the run that finished."""
        keys = {llm: llm if model_key(llm) == llm else legacy_key(llm)  # the first: written by this version
                for (llm,) in self._db.execute("SELECT DISTINCT llm FROM responses")}
        if all(key == llm for llm, key in keys.items()):
            return
        kept: set[tuple] = set()
        gone, moved = [], []
        for rowid, prompt, llm, idx in self._db.execute(
                "SELECT rowid, prompt, llm, idx FROM responses ORDER BY rowid DESC"):
            if (prompt, keys[llm], idx) in kept:
                gone.append((rowid,))
                continue
            kept.add((prompt, keys[llm], idx))
            if keys[llm] != llm:
                moved.append((keys[llm], rowid))
        self._db.executemany("DELETE FROM responses WHERE rowid = ?", gone)
        self._db.executemany("UPDATE responses SET llm = ? WHERE rowid = ?", moved)

    def _drop_model_paths(self) -> None:
        """Rewrite entries stored with an absolute model path (by earlier versions) as ``portable`` stores them."""
        rows = self._db.execute("SELECT rowid, response FROM responses WHERE response LIKE ?",
                                ('%"model_name": "/%',)).fetchall()
        for rowid, response in rows:
            try:
                stored = dumps(portable(loads(response, allowed_objects="core")))
            except Exception:  # noqa: BLE001 - another LangChain version's entry: left as it is
                continue
            self._db.execute("UPDATE responses SET response = ? WHERE rowid = ?", (stored, rowid))

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """The cached generations for this prompt and model, if any (an earlier version's entry as a fallback)."""
        query = (f"SELECT response, {'seconds' if self._timed else 'NULL'} FROM responses "
                 "WHERE prompt = ? AND llm = ? ORDER BY idx")
        key = model_key(llm_string)
        with self._lock:
            rows = self._db.execute(query, (prompt, key)).fetchall()
            if not rows:
                rows = self._db.execute(query, (prompt, legacy_key(llm_string))).fetchall()
            if not rows:
                self._missed[(prompt, key)] = time.monotonic()
                return None
        try:
            generations = [loads(row[0], allowed_objects="core") for row in rows]
        except Exception:  # noqa: BLE001 - an entry written by another LangChain version: treat as a miss
            return None
        return [with_seconds(generations[0], rows[0][1]), *generations[1:]]

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Store the generations of one call."""
        self._store(prompt, model_key(llm_string), return_val)

    def store_unreturned(self, prompt: str, return_val: RETURN_VAL_TYPE) -> None:
        """Store the generations of a call now being made for ``prompt`` that its client raised on instead of
        returning (a schema-constrained reply cut off at its output limit), under the key its lookup missed with,
        so a replay finds it as it finds any other reply; nothing when no such call is pending."""
        with self._lock:
            pending = [key for prompt_asked, key in self._missed if prompt_asked == prompt]
        if pending:
            self._store(prompt, pending[-1], return_val)

    def _store(self, prompt: str, key: str, return_val: RETURN_VAL_TYPE) -> None:
        with self._lock:
            if not self._timed:
                self._db.execute("ALTER TABLE responses ADD COLUMN seconds REAL")
                self._timed = True
            missed = self._missed.pop((prompt, key), None)
            seconds = round(time.monotonic() - missed, 3) if missed is not None else None
            self._db.executemany("INSERT OR REPLACE INTO responses (prompt, llm, idx, response, seconds) "
                                 "VALUES (?, ?, ?, ?, ?)",
                                 [(prompt, key, i, dumps(portable(gen)), seconds) for i, gen in enumerate(return_val)])
            self._db.commit()

    def clear(self, **kwargs) -> None:
        """Forget every response."""
        with self._lock:
            self._db.execute("DELETE FROM responses")
            self._db.commit()
