"""Where every benchmark comes from: its pinned upstream files, and where they are on this machine.

Plain data and file lookups only: downloading is ``codeforest.fetch``, reading a file into problems is
``codeforest.loading`` and the format modules it names. A dataset's files are looked for in the data folder the
user names (``--data-dir`` / ``$CODEFOREST_DATA``, or ``../shared/data`` beside a checkout), then in the user cache
(``<cache>/data``), where ``codeforest data fetch`` puts them.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codeforest.tools import cache_dir

MIRROR_ENV = "CODEFOREST_DATA_MIRROR"  # a base URL serving https://HOST/PATH as BASE/HOST/PATH (a local mirror)
PINS_FILE = "pins.json"  # hashes and hub revisions recorded at first fetch, where none is pinned in advance


@dataclass(frozen=True)
class SourceFile:
    """One upstream file, pinned: a repository commit and path, a release tag and asset, or a hub revision and
    file. ``local`` is where it lives inside a data folder; ``sha256`` is None where the hash cannot be known in
    advance (it is recorded at the first fetch and checked from then on)."""

    kind: Literal["github", "release", "hub"]
    repo: str
    ref: str
    path: str
    local: str
    sha256: str | None = None
    size: int | None = None  # bytes, where known in advance

    @property
    def url(self) -> str:
        """Where a plain download fetches it (a hub file's resolve URL on the public hub)."""
        if self.kind == "github":
            return mirrored(f"https://raw.githubusercontent.com/{self.repo}/{self.ref}/{self.path}")
        if self.kind == "release":
            return mirrored(f"https://github.com/{self.repo}/releases/download/{self.ref}/{self.path}")
        endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
        return f"{endpoint}/datasets/{self.repo}/resolve/{self.ref}/{self.path}"

    @property
    def origin(self) -> str:
        """The source as a person cites it."""
        if self.kind == "github":
            return f"github.com/{self.repo} @ {self.ref[:12]}: {self.path}"
        if self.kind == "release":
            return f"github.com/{self.repo} release {self.ref}: {self.path}"
        return f"huggingface.co/datasets/{self.repo} @ {self.ref}: {self.path}"


@dataclass(frozen=True)
class DatasetInfo:
    """A benchmark codeforest knows: its files, how many problems, their style, licence and format."""

    name: str
    problems: int
    style: str  # function | stdin/stdout | function + stdin/stdout
    files: tuple[SourceFile, ...]
    licence: str
    format: Literal["papers", "humaneval_plus", "mbpp_plus", "livecodebench"]
    note: str = ""


def mirrored(url: str) -> str:
    """``url`` through the mirror ``$CODEFOREST_DATA_MIRROR`` names, if one does (``https://host/p`` ->
    ``MIRROR/host/p``)."""
    mirror = os.environ.get(MIRROR_ENV, "").rstrip("/")
    return f"{mirror}/{url.removeprefix('https://')}" if mirror else url


# (repository, commit, the repository's own licence)
CODETREE = ("SalesforceAIResearch/CodeTree", "72c9c874f831e1b4f8b4c449ac8ffeb141dc8fbd",
            "Apache-2.0 (CodeTree repository)")
RPM_MCTS = ("codellm12842/RPM-MCTS", "9189885ffa764381734725d5eab68e83a9634023", "the RPM-MCTS repository states none")


def _papers(name: str, problems: int, style: str, repo: tuple[str, str, str], path: str, sha256: str, size: int,
            licence: str, note: str) -> DatasetInfo:
    """A file the papers used: one file of a repository at a commit, kept as ``<name>.<its extension>``."""
    local = name + Path(path).suffix
    return DatasetInfo(name, problems, style, (SourceFile("github", repo[0], repo[1], path, local, sha256, size),),
                       f"{licence}; {repo[2]}", "papers", note)


LCB_REPO = "livecodebench/code_generation_lite"
LCB_FILES = ("test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl")
LCB_PROBLEMS = (400, 511, 612, 713, 880, 1055)  # release_v1 .. release_v6, each holding the ones before


def _livecodebench(release: int) -> DatasetInfo:
    files = tuple(SourceFile("hub", LCB_REPO, "main", name, f"livecodebench/{name}") for name in LCB_FILES[:release])
    return DatasetInfo(
        f"livecodebench_v{release}", LCB_PROBLEMS[release - 1], "function + stdin/stdout", files,
        "CC BY 4.0 (problem statements belong to LeetCode, AtCoder and Codeforces)", "livecodebench",
        f"LiveCodeBench release_v{release}: LeetCode as Solution methods, AtCoder/Codeforces as stdin/stdout; "
        "filter by contest date with --since/--until")


DATASETS: dict[str, DatasetInfo] = {info.name: info for info in (
    _papers("humaneval164", 164, "function", CODETREE, "data/humaneval.jsonl",
            "7fd1fbb88159d03362b8bf8e805dfc668226a43a2933fbd288608402ce046877", 238883, "MIT (HumanEval)",
            "public tests: the docstring examples as asserts"),
    _papers("mbpp500", 500, "function", CODETREE, "data/mbpp.jsonl",
            "bec44f036d8100d140ddf62f23eca6dd8dd3f2ded6b5fa2c4240632803d47e31", 389442, "CC BY 4.0 (MBPP)",
            "MBPP test split, ids 11-510; public test: the first assert"),
    _papers("apps_stdio150", 150, "stdin/stdout", CODETREE, "data/apps_selected.json",
            "6934e2b25b0de111c327291d12d09ea95b6a3ed01b7e27e0351dc7a1ba7920cf", 665035, "MIT (APPS)",
            "APPS, mixed difficulty"),
    _papers("apps_introductory150", 150, "function", RPM_MCTS, "dataset/apps_v2/apps_test_introductory150.jsonl",
            "443372e18affd2d3e44e5d2b6b72d821247f31d8c448e5122740c22c01657f42", 357897, "MIT (APPS)",
            "APPS rewritten as functions"),
    _papers("apps_interview150", 150, "function", RPM_MCTS, "dataset/apps_v2/apps_test_interview150.jsonl",
            "ba3d1b95d3eefa363569033407f4ac6b8f221b75e9c3146ddaee70485f0215cd", 485130, "MIT (APPS)",
            "APPS rewritten as functions"),
    _papers("codecontests150", 150, "function", RPM_MCTS, "dataset/code_contests/CodeContests150.jsonl",
            "f5eca4462eba28ad33a2b63a85d9ba5de45f4c7d2a3b227795ab7f2aa13b702e", 880877, "CC BY 4.0 (CodeContests)",
            "CodeContests as functions"),
    DatasetInfo("humaneval_plus", 164, "function", (SourceFile(
        "release", "evalplus/humanevalplus_release", "v0.1.10", "HumanEvalPlus.jsonl.gz",
        "HumanEvalPlus-v0.1.10.jsonl.gz",
        "272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101", 925_932),),
        "Apache-2.0 (EvalPlus); MIT (HumanEval)", "humaneval_plus",
        "HumanEval+ v0.1.10: private tests = base + plus inputs, expected outputs from the reference solution"),
    DatasetInfo("mbpp_plus", 378, "function", (SourceFile(
        "release", "evalplus/mbppplus_release", "v0.2.0", "MbppPlus.jsonl.gz", "MbppPlus-v0.2.0.jsonl.gz",
        "af43697e8791c4c149bdfd6b489d8b5412507551ac20e28a439f650b8225db63", 336_032),),
        "Apache-2.0 (EvalPlus); CC BY 4.0 (MBPP)", "mbpp_plus",
        "MBPP+ v0.2.0: public test = the prompt's assert; private = base + plus inputs"),
    *(_livecodebench(release) for release in range(1, len(LCB_FILES) + 1)),
)}
ALIASES = {"humaneval": "humaneval164", "mbpp": "mbpp500", "apps_stdio": "apps_stdio150",
           "humaneval+": "humaneval_plus", "mbpp+": "mbpp_plus", "livecodebench": f"livecodebench_v{len(LCB_FILES)}"}


def dataset_info(name: str) -> DatasetInfo | None:
    """The registered dataset a name (or alias) names, or None."""
    return DATASETS.get(ALIASES.get(name, name))


def data_cache() -> Path:
    """Where ``codeforest data fetch`` keeps datasets: ``<user cache>/data``."""
    return cache_dir() / "data"


def locate(file: SourceFile, data_dir: Path | None) -> Path | None:
    """Where a file is: in the user's data folder (which wins), else in the cache; None when in neither."""
    for folder in (data_dir, data_cache()):
        if folder is not None and (folder / file.local).is_file():
            return folder / file.local
    return None


def pins() -> dict[str, dict]:
    """Hashes (and hub revisions) recorded at first fetch, by local file name."""
    path = data_cache() / PINS_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise OSError(f"{path} cannot be read ({exc}); remove it to record the hashes again at the next fetch") \
            from exc


def record_pin(file: SourceFile, sha256: str, revision: str) -> None:
    """Record a file's hash and resolved revision, atomically."""
    recorded = pins()
    recorded[file.local] = {"sha256": sha256, "revision": revision, "source": file.origin}
    write_atomically(data_cache() / PINS_FILE, (json.dumps(recorded, indent=1, sort_keys=True) + "\n").encode())


def expected_hash(file: SourceFile) -> str | None:
    """The sha256 a file must have: pinned, else recorded at its first fetch, else unknown."""
    return file.sha256 or pins().get(file.local, {}).get("sha256")


def write_atomically(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` so that a reader sees the old file or the whole new one, never a part."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
