"""``codeforest data fetch`` / ``verify``: download pinned dataset files into the user cache and check them.

Plain files (GitHub raw paths, release assets) come through ``httpx``, already a dependency: a stream hashed
as it is written to a temporary file beside the target, moved into place only when its sha256 is right, and
resumed with an HTTP range after a dropped connection. A host that cannot be reached fails at once (no retry
loop when offline). Hub files come through ``huggingface_hub`` (its ``HF_ENDPOINT``, ``HF_HUB_OFFLINE``, resumed
downloads), pinned to the commit the revision resolved to at the first fetch.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codeforest.datasets import (
    DATASETS,
    DatasetInfo,
    SourceFile,
    data_cache,
    dataset_info,
    expected_hash,
    pins,
    record_pin,
)
from codeforest.problems import DatasetError

ATTEMPTS = 4  # a transfer dropped mid-file is resumed this many times in all

Progress = Callable[[str, int, int | None], None]  # (file, bytes so far, total or None)


class FetchError(DatasetError):
    """A download that did not give the pinned file; nothing was cached."""


@dataclass
class Fetched:
    """One file of a fetch: where it is, its hash, and whether it was downloaded now."""

    file: SourceFile
    path: Path
    sha256: str
    downloaded: bool
    recorded: bool = False  # its hash (and revision) recorded now, at the first fetch


def sha256_of(path: Path) -> str:
    """The sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def resolve_names(names: list[str]) -> list[DatasetInfo]:
    """The datasets named (aliases allowed); an unknown name is refused with the known ones."""
    found = []
    for name in names:
        info = dataset_info(name)
        if info is None:
            raise DatasetError(f"Unknown dataset {name!r}; known: {', '.join(DATASETS)}")
        found.append(info)
    return found


def fetch_dataset(info: DatasetInfo, *, progress: Progress | None = None) -> list[Fetched]:
    """Download every file of a dataset into the cache that is not there with the right hash yet."""
    return [fetch_file(file, progress=progress) for file in info.files]


def fetch_file(file: SourceFile, *, progress: Progress | None = None) -> Fetched:
    """One file into the cache: kept if already there with its hash, else downloaded and checked."""
    target = data_cache() / file.local
    want = expected_hash(file)
    if target.is_file() and want:
        have = sha256_of(target)
        if have == want:
            return Fetched(file, target, have, downloaded=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    if file.kind == "hub":
        return _fetch_hub(file, target, want)
    have = download(file.url, target, want, progress=progress, hint=placing_hint(file, target, want))
    recorded = want is None
    if recorded:
        record_pin(file, have, file.ref)
    return Fetched(file, target, have, downloaded=True, recorded=recorded)


def placing_hint(file: SourceFile, target: Path, sha256: str | None) -> str:
    """How a person places the file by hand."""
    check = f"check that `sha256sum` prints {sha256}" if sha256 else \
        "no hash is pinned for it in advance (the first fetch records one)"
    return (f"To place it by hand: download {file.url}, {check}, and save it as {target} (or put it in a folder of "
            f"your own as {file.local} and pass --data-dir FOLDER or set CODEFOREST_DATA)")


def download(url: str, target: Path, sha256: str | None, *, progress: Progress | None = None,
             hint: str = "", attempts: int = ATTEMPTS) -> str:
    """Stream ``url`` into ``target`` atomically and return its sha256; a mismatch with ``sha256`` (when given)
    leaves nothing behind. A transfer dropped mid-file is resumed with an HTTP range (or restarted where the
    server ignores ranges); a host that cannot be reached fails at once."""
    import httpx

    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as out, httpx.Client(follow_redirects=True,
                                                       timeout=httpx.Timeout(60.0, connect=10.0)) as client:
            digest, received = hashlib.sha256(), 0
            for attempt in range(1, attempts + 1):
                headers = {"Accept-Encoding": "identity"}  # ranges count the file's own bytes
                if received:
                    headers["Range"] = f"bytes={received}-"
                try:
                    with client.stream("GET", url, headers=headers) as response:
                        if response.status_code >= 400:
                            raise FetchError(f"{url} answered HTTP {response.status_code}. {hint}")
                        if received and response.status_code != 206:  # the server ignored the range: start over
                            out.seek(0)
                            out.truncate()
                            digest, received = hashlib.sha256(), 0
                        total = _total(response, received)
                        for chunk in response.iter_raw():  # as it arrives: a buffered chunk would be lost
                            out.write(chunk)
                            digest.update(chunk)
                            received += len(chunk)
                            if progress:
                                progress(target.name, received, total)
                    break
                except httpx.ConnectError as exc:
                    raise FetchError(f"cannot reach {httpx.URL(url).host} ({exc or type(exc).__name__}): offline? "
                                     f"{hint}") from None
                except httpx.TransportError as exc:  # dropped mid-file, a stalled read
                    if attempt == attempts:
                        raise FetchError(f"the transfer of {url} broke off {attempts} times, last after "
                                         f"{received:,} bytes ({type(exc).__name__}). {hint}") from None
                    time.sleep(0.5 * attempt)
            out.flush()
            os.fsync(out.fileno())
        have = digest.hexdigest()
        if sha256 and have != sha256:
            raise FetchError(f"{url} does not match its pinned sha256: expected {sha256}, got {have} "
                             f"({received:,} bytes); nothing was cached. {hint}")
        os.replace(temp, target)
        return have
    finally:
        temp.unlink(missing_ok=True)


def _total(response, already: int) -> int | None:
    length = response.headers.get("Content-Length")
    return already + int(length) if length and length.isdigit() else None


def _fetch_hub(file: SourceFile, target: Path, want: str | None) -> Fetched:
    """A hub file through huggingface_hub, at the commit recorded at its first fetch (else its revision, resolved
    now to a commit and recorded with the file's hash)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    revision = pins().get(file.local, {}).get("revision", file.ref)
    hint = placing_hint(file, target, want)
    endpoint = os.environ.get("HF_ENDPOINT") or None
    try:
        meta = get_hf_file_metadata(hf_hub_url(file.repo, file.path, repo_type="dataset", revision=revision,
                                               endpoint=endpoint))
        commit = meta.commit_hash or revision
        with tempfile.TemporaryDirectory(prefix=".incoming-", dir=target.parent) as incoming:
            path = Path(hf_hub_download(file.repo, file.path, repo_type="dataset", revision=commit,
                                        local_dir=incoming, endpoint=endpoint))
            have = sha256_of(path)
            if want and have != want:
                raise FetchError(f"{file.url} at {commit} does not match the sha256 recorded at its first fetch: "
                                 f"expected {want}, got {have}; nothing was cached. {hint}")
            os.replace(path, target)
    except OfflineModeIsEnabled:
        raise FetchError(f"HF_HUB_OFFLINE is set, and {file.local} is not in the cache. {hint}") from None
    except HfHubHTTPError as exc:
        raise FetchError(f"{file.url}: {str(exc).splitlines()[0]}. {hint}") from None
    except OSError as exc:
        if isinstance(exc, FetchError):
            raise
        raise FetchError(f"cannot fetch {file.url} ({type(exc).__name__}: {exc}): offline? {hint}") from None
    except Exception as exc:  # httpx errors of the hub client
        if type(exc).__module__.startswith(("httpx", "httpcore")):
            raise FetchError(f"cannot reach the hub for {file.url} ({type(exc).__name__}): offline? {hint}") \
                from None
        raise
    recorded = want is None
    if recorded:
        record_pin(file, have, commit)
    return Fetched(file, target, have, downloaded=True, recorded=recorded)


@dataclass
class Verified:
    """A cached file re-hashed: ``ok``, ``changed`` (not its pinned or recorded hash) or ``unpinned``."""

    dataset: str
    file: SourceFile
    path: Path
    status: str
    sha256: str
    expected: str | None


def verify(infos: list[DatasetInfo] | None = None) -> list[Verified]:
    """Re-hash every cached file of the datasets (default: all) against its pinned or recorded sha256."""
    seen, results = set(), []
    for info in infos or list(DATASETS.values()):
        for file in info.files:
            path = data_cache() / file.local
            if file.local in seen or not path.is_file():
                continue
            seen.add(file.local)
            want, have = expected_hash(file), sha256_of(path)
            status = "unpinned" if want is None else "ok" if have == want else "changed"
            results.append(Verified(info.name, file, path, status, have, want))
    return results

