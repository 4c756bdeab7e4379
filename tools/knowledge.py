"""The RPM-MCTS knowledge base: a Chroma collection on disk of problem + step-prefix documents.

Each problem with steps ``s1 .. sn`` gives n documents, ``problem + "\\n" + s1 + ... + sj`` for j = 1..n, with
metadata ``{problem_id, source, topic, pre_steps_num}`` (RPM-MCTS Eq. 1 and its released code). The process
reward of a partial solution is ``K = max(0, best cosine similarity)`` among the documents of its topic (Eq. 4).
The collection uses cosine space; embeddings come from any LangChain ``Embeddings``. The default is
``wordllama``'s bundled model: it ships inside the PyPI wheel (19 MB), loads offline in a fraction of a second
and needs no PyTorch. A knowledge base remembers which datasets and problems it holds (``kb.json``), so a
graph can refuse to search a problem whose own solution steps it contains.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

COLLECTION = "rpm_mcts_steps"
PROBLEMS = "rpm_mcts_problems"  # one document per stored problem (its text), for the near-duplicate guard
MANIFEST = "kb.json"
DEFAULT_EMBEDDER = "wordllama"
# A problem is the same as a stored one when its text is nearly the same (difflib ratio of the texts, whitespace and
# case aside) and so is its embedding (cosine): apps_stdio150's APPS/3917 is CodeContests/1190 reworded (0.956,
# 0.98 under WordLlama); MBPP's max-vs-min siblings, other problems, reach 0.97 in text but 0.94 in cosine. Over
# every problem of the six datasets only those two pairs pass both (MBPP/154 is MBPP/49 reworded).
DUPLICATE_TEXT, DUPLICATE_COSINE = 0.9, 0.95
PACKAGED_STEPS = Path(str(resources.files("codeforest.tools") / "kb_steps.jsonl"))  # shipped in the package
log = logging.getLogger("codeforest.kb")


class KnowledgeError(RuntimeError):
    """A knowledge base that is missing, was built differently, or holds the problem being solved."""


_IMPORTING = threading.Lock()


@contextlib.contextmanager
def _root_logging_untouched():
    """Undo what the body does to the root logger's level and handlers (an application's own choice); one body at
    a time, so two threads cannot restore each other's state."""
    with _IMPORTING:
        root = logging.getLogger()
        level, handlers = root.level, list(root.handlers)
        try:
            yield
        finally:
            for handler in [h for h in root.handlers if h not in handlers]:
                root.removeHandler(handler)
            root.setLevel(level)


class WordLlamaEmbeddings(Embeddings):
    """The offline default: wordllama's ``l2_supercat`` model (256 dimensions), loaded from its own wheel."""

    name = "wordllama-l2_supercat-256"

    def __init__(self, dim: int = 256):
        with _root_logging_untouched():  # wordllama calls logging.basicConfig(level=INFO) when imported
            import wordllama
            from wordllama import WordLlama

        self._model = WordLlama.load(cache_dir=os.path.dirname(wordllama.__file__), disable_download=True, dim=dim)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Unit-length embeddings of documents."""
        return self._model.embed(list(texts), norm=True).tolist() if texts else []

    def embed_query(self, text: str) -> list[float]:
        """The unit-length embedding of one query."""
        return self.embed_documents([text])[0]


def fingerprint(prompt: str) -> str:
    """A problem's identity in a knowledge base: its prompt text, whitespace aside."""
    return hashlib.sha256(" ".join(prompt.split()).encode()).hexdigest()[:16]


def text_similarity(a: str, b: str) -> float:
    """How alike two problem texts are (difflib's ratio), whitespace and case aside."""
    return difflib.SequenceMatcher(None, " ".join(a.split()).lower(), " ".join(b.split()).lower(),
                                   autojunk=False).ratio()


def embeddings_name(embeddings: Embeddings) -> str:
    """What a knowledge base records about its embedder (a query must use the same one): its model's name (its
    ``name``, ``model``, ``model_name`` or ``model_id``, wherever it is served), else its class's."""
    for field in ("name", "model", "model_name", "model_id"):
        value = getattr(embeddings, field, None)
        if isinstance(value, str) and value:
            return value
    return type(embeddings).__name__


def prefix_documents(record: dict) -> list[tuple[str, str, dict]]:
    """(id, text, metadata) for every step prefix of one problem's steps."""
    docs = []
    for j in range(1, len(record["steps"]) + 1):
        text = record["prompt"].rstrip() + "\n" + "\n".join(record["steps"][:j])
        meta = {"problem_id": record["id"], "source": record["source"], "topic": record["topic"], "pre_steps_num": j}
        docs.append((f"{record['source']}:{record['id']}:{j}", text, meta))
    return docs


def cosine_matrix(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """Pairwise cosine similarities of vectors."""
    m = np.asarray(vectors, dtype=float)
    m = m / np.clip(np.linalg.norm(m, axis=1, keepdims=True), 1e-12, None)
    return m @ m.T


class KnowledgeBase:
    """A persistent Chroma collection of step prefixes, with its manifest of datasets and problems."""

    def __init__(self, path: str | os.PathLike, embeddings: Embeddings | None = None, *, create: bool = False):
        import chromadb
        from chromadb.config import Settings

        self.path = Path(path).expanduser()
        if not create and not (self.path / MANIFEST).is_file():
            raise KnowledgeError(f"No knowledge base at {self.path}: build one with `codeforest kb build`, or run "
                                 "RPM-MCTS without one (rpm_kb=false, the w/o-KB ablation: CODEFOREST_RPM_KB=false)")
        self.path.mkdir(parents=True, exist_ok=True)
        self.embeddings = embeddings or WordLlamaEmbeddings()
        self.manifest = self._read_manifest()
        recorded = self.manifest.get("embeddings")
        if recorded and recorded != embeddings_name(self.embeddings):
            raise KnowledgeError(f"{self.path} was built with embeddings {recorded!r}, not "
                                 f"{embeddings_name(self.embeddings)!r}; use the same embedder or rebuild it")
        self.client = chromadb.PersistentClient(str(self.path), settings=Settings(anonymized_telemetry=False))
        self.collection = self.client.get_or_create_collection(COLLECTION, metadata={"hnsw:space": "cosine"},
                                                               embedding_function=None)
        self.problem_texts = self.client.get_or_create_collection(PROBLEMS, metadata={"hnsw:space": "cosine"},
                                                                  embedding_function=None)

    def _read_manifest(self) -> dict:
        file = self.path / MANIFEST
        return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}

    def _write_manifest(self) -> None:
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self.manifest, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path / MANIFEST)

    def add(self, records: Iterable[dict], batch: int = 256) -> int:
        """Embed and store the step prefixes of problems not stored yet, and move stored problems whose record
        now names another topic (no new embedding); return how many problems were added."""
        problems = self.manifest.setdefault("problems", {})
        given = [{**r, "fingerprint": r.get("fingerprint") or fingerprint(r["prompt"])} for r in records
                 if r.get("steps")]
        fresh = [r for r in given if r["fingerprint"] not in problems]
        moved = [r for r in given if r["fingerprint"] in problems
                 and problems[r["fingerprint"]].get("topic") != r["topic"]]
        moved_docs = [doc for record in moved for doc in prefix_documents(record)]
        for start in range(0, len(moved_docs), batch):
            chunk = moved_docs[start:start + batch]
            self.collection.update(ids=[d[0] for d in chunk], metadatas=[d[2] for d in chunk])
        for record in moved:
            problems[record["fingerprint"]]["topic"] = record["topic"]
        docs = [doc for record in fresh for doc in prefix_documents(record)]
        for start in range(0, len(docs), batch):
            chunk = docs[start:start + batch]
            self.collection.upsert(ids=[d[0] for d in chunk], documents=[d[1] for d in chunk],
                                   metadatas=[d[2] for d in chunk],
                                   embeddings=self.embeddings.embed_documents([d[1] for d in chunk]))
        for record in fresh:
            problems[record["fingerprint"]] = {"id": record["id"], "source": record["source"],
                                               "topic": record["topic"]}
        self._add_problem_texts(given)
        self.manifest["datasets"] = sorted({p["source"] for p in problems.values()})
        self.manifest["embeddings"] = embeddings_name(self.embeddings)
        self.manifest["documents"] = self.collection.count()
        self._write_manifest()
        return len(fresh)

    def _add_problem_texts(self, records: list[dict], batch: int = 256) -> None:
        """Store each problem's text once (also for problems a KB made before the guard holds already)."""
        ids = list(dict.fromkeys(r["fingerprint"] for r in records))
        present = set(self.problem_texts.get(ids=ids, include=[])["ids"]) if ids else set()
        missing = list({r["fingerprint"]: r for r in records if r["fingerprint"] not in present}.values())
        for start in range(0, len(missing), batch):
            chunk = missing[start:start + batch]
            self.problem_texts.upsert(ids=[r["fingerprint"] for r in chunk], documents=[r["prompt"] for r in chunk],
                                      metadatas=[{"problem_id": r["id"], "source": r["source"]} for r in chunk],
                                      embeddings=self.embeddings.embed_documents([r["prompt"] for r in chunk]))

    def duplicate_of(self, prompt: str, problem_id: str | None = None) -> dict | None:
        """The stored problem that ``prompt`` is, or None: the same text, the same problem id under any dataset
        (e.g. APPS/334 as a function in apps_interview150 and as stdin/stdout in apps_stdio150), or a near-duplicate
        (text ratio at least ``DUPLICATE_TEXT`` and cosine at least ``DUPLICATE_COSINE`` to one of the 5 nearest).
        The entry found has ``why``."""
        problems = self.manifest.get("problems", {})
        held = problems.get(fingerprint(prompt))
        if held:
            return {**held, "why": "the same text"}
        same_id = next((p for p in problems.values() if problem_id and p["id"] == problem_id), None)
        if same_id:
            return {**same_id, "why": "the same problem id"}
        if self.problem_texts.count() == 0:
            return None
        found = self.problem_texts.query(query_embeddings=[self.embeddings.embed_query(prompt)],
                                         n_results=min(5, self.problem_texts.count()),
                                         include=["documents", "metadatas", "distances"])
        for distance, text, meta in zip(found["distances"][0], found["documents"][0], found["metadatas"][0],
                                        strict=True):
            ratio = text_similarity(prompt, text)
            if 1.0 - distance >= DUPLICATE_COSINE and ratio >= DUPLICATE_TEXT:
                return {"id": meta["problem_id"], "source": meta["source"],
                        "why": f"a near-duplicate (text {ratio:.3f}, cosine {1.0 - distance:.3f})"}
        return None

    def topics(self) -> dict[str, int]:
        """How many stored problems each topic has."""
        counts: dict[str, int] = {}
        for entry in self.manifest.get("problems", {}).values():
            counts[entry.get("topic")] = counts.get(entry.get("topic"), 0) + 1
        return counts

    def holds(self, fingerprint: str) -> dict | None:
        """The KB's entry for a problem (by its prompt's fingerprint), or None."""
        return self.manifest.get("problems", {}).get(fingerprint)

    def reward(self, text: str, topic: str | None = None) -> float:
        """K = max(0, the best cosine similarity of ``text`` to a stored prefix of the topic); 0 when none."""
        hits = self.search(text, k=1, topic=topic)
        return max(0.0, hits[0]["similarity"]) if hits else 0.0

    def search(self, text: str, k: int = 3, topic: str | None = None) -> list[dict]:
        """The ``k`` nearest stored prefixes: ``{"similarity", "document", **metadata}`` each, best first."""
        if self.collection.count() == 0:
            return []
        found = self.collection.query(query_embeddings=[self.embeddings.embed_query(text)], n_results=k,
                                      where={"topic": topic} if topic else None,
                                      include=["documents", "metadatas", "distances"])
        return [{"similarity": 1.0 - d, "document": doc, **meta}
                for d, doc, meta in zip(found["distances"][0], found["documents"][0], found["metadatas"][0],
                                        strict=True)]

    def similarities(self, texts: Sequence[str]) -> np.ndarray:
        """Pairwise cosine similarities of texts under the KB's embedder (RPM-MCTS's sibling filter)."""
        return cosine_matrix(self.embeddings.embed_documents(list(texts)))

    def as_retriever(self, k: int = 4, topic: str | None = None):
        """The collection as a LangChain retriever (``langchain-chroma``), optionally filtered by topic."""
        from langchain_chroma import Chroma

        store = Chroma(client=self.client, collection_name=COLLECTION, embedding_function=self.embeddings)
        return store.as_retriever(search_kwargs={"k": k, **({"filter": {"topic": topic}} if topic else {})})


def default_kb_path(embeddings: Embeddings | None = None) -> Path:
    """The default knowledge base: built from the packaged steps into the user cache (one per embedder)."""
    from codeforest.tools import cache_dir

    name = embeddings_name(embeddings) if embeddings is not None else WordLlamaEmbeddings.name
    suffix = "" if name == WordLlamaEmbeddings.name else "-" + re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    return cache_dir() / "kb" / f"default{suffix}"


_embedders: dict[tuple[str, str, str], Embeddings] = {}


def embedder(spec: str = DEFAULT_EMBEDDER, base_url: str = "", api_key_env: str = "") -> Embeddings:
    """The embedder a setting names (made once per process): ``wordllama`` (bundled, offline), ``openai:MODEL``
    (an OpenAI-compatible ``/v1/embeddings``, at ``base_url`` when given, its key in the variable
    ``api_key_env``), or ``MODULE:NAME``, a LangChain ``Embeddings`` (or a class or function making one)."""
    key = (spec, base_url, api_key_env)
    if key not in _embedders:
        _embedders[key] = _make_embedder(spec, base_url, api_key_env)
    return _embedders[key]


def _make_embedder(spec: str, base_url: str, api_key_env: str) -> Embeddings:
    if spec == DEFAULT_EMBEDDER:
        return WordLlamaEmbeddings()
    kind, _, name = spec.partition(":")
    if not name:
        raise KnowledgeError(f"kb_embedder {spec!r}: use 'wordllama', 'openai:MODEL' or 'MODULE:NAME'")
    if kind == "openai":
        from langchain_openai import OpenAIEmbeddings

        key = os.environ.get(api_key_env or "OPENAI_API_KEY") or "not-needed"
        # no tiktoken: counting tokens would download its encoding, and an OpenAI-compatible server takes text
        return OpenAIEmbeddings(model=name, base_url=base_url or None, api_key=key, check_embedding_ctx_length=False)
    try:
        made = getattr(importlib.import_module(kind), name)
    except (ImportError, AttributeError) as exc:
        raise KnowledgeError(f"kb_embedder {spec!r}: cannot import {name} from {kind} ({exc})") from exc
    made = made() if callable(made) and not isinstance(made, Embeddings) else made
    if not isinstance(made, Embeddings):
        raise KnowledgeError(f"kb_embedder {spec!r} is a {type(made).__name__}, not a LangChain Embeddings")
    return made


def read_steps(path: str | Path) -> list[dict]:
    """The step records of a steps file; a last line cut short by a kill is skipped, any other line that is not a
    step record is skipped with a warning naming how many."""
    path = Path(path)
    if not path.is_file():
        return []
    records, others = [], []
    lines = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    last = lines[-1][0] if lines else 0
    for lineno, line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if isinstance(record, dict) and "id" in record and isinstance(record.get("steps"), list):
            records.append(record)
        elif lineno < last or record is not None:  # not the last line a kill cut short
            others.append(lineno)
    if others:
        log.warning("%s: skipped %d lines that are not step records ({\"id\", \"steps\": [...]}), the first line %d",
                    path, len(others), others[0])
    return records


_opened: dict = {}
_opening = threading.Lock()


def open_knowledge(path: str | os.PathLike | None = None, embeddings: Embeddings | None = None) -> KnowledgeBase:
    """The knowledge base at ``path``, or the default one (built from the packaged steps, embeddings only, on
    first use, and topped up when the packaged steps hold more); opened once per process. ``embeddings``: its
    embedder (default WordLlama); a KB built with another refuses to open."""
    target = Path(path).expanduser() if path else default_kb_path(embeddings)
    with _opening:
        if str(target) not in _opened:
            if path is None:  # the default KB follows the packaged steps (a newer release may ship more)
                records = [r for r in read_steps(PACKAGED_STEPS) if r["steps"]]
                if not records and not (target / MANIFEST).is_file():
                    raise KnowledgeError("RPM-MCTS needs a knowledge base and none was found: build one with "
                                         "`codeforest kb build --from DATASET --out DIR` and set kb_path "
                                         "(CODEFOREST_KB_PATH=DIR), or run the w/o-KB ablation with rpm_kb=false "
                                         "(CODEFOREST_RPM_KB=false)")
                KnowledgeBase(target, embeddings, create=True).add(records)
            _opened[str(target)] = KnowledgeBase(target, embeddings)
        opened = _opened[str(target)]
    if embeddings is not None and embeddings_name(embeddings) != embeddings_name(opened.embeddings):
        raise KnowledgeError(f"{target} is open with embeddings {embeddings_name(opened.embeddings)!r}, not "
                             f"{embeddings_name(embeddings)!r}")
    return opened
