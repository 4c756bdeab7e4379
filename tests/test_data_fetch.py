"""``codeforest data``: fetch against a local server playing each source, checksums, resumes, offline, verify.

No test reaches the internet: GitHub raw paths and release assets come from ``tests.data_server`` behind
``$CODEFOREST_DATA_MIRROR``, hub files behind ``$HF_ENDPOINT``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import socket
import subprocess
import sys

import pytest

from codeforest.cli import main
from codeforest.datasets import DATASETS, DatasetInfo, SourceFile, data_cache, pins
from codeforest.loading import load_dataset
from tests.conftest import FIXTURES
from tests.data_server import HUB_COMMIT, DataServer

TINY = (FIXTURES / "functions.jsonl").read_bytes()
TINY_SHA = hashlib.sha256(TINY).hexdigest()


@pytest.fixture
def server(monkeypatch, tmp_path):
    """The local source server, with the mirror, the hub endpoint and an empty user cache pointed at it."""
    with DataServer() as srv:
        monkeypatch.setenv("CODEFOREST_DATA_MIRROR", srv.url)
        monkeypatch.setenv("HF_ENDPOINT", srv.url)
        monkeypatch.setenv("CODEFOREST_CACHE", str(tmp_path / "cache"))
        monkeypatch.delenv("CODEFOREST_DATA", raising=False)
        monkeypatch.setattr("codeforest.loading.find_data_dir", lambda explicit=None: None)
        yield srv


def tiny(monkeypatch, kind="github", sha256=TINY_SHA, name="tiny") -> SourceFile:
    """Register a one-file dataset of the project's fixture problems, served as ``kind``."""
    file = SourceFile(kind, "someone/bench", "c0ffee" if kind != "hub" else "main", "data/tiny.jsonl",
                      f"{name}.jsonl", sha256)
    monkeypatch.setitem(DATASETS, name, DatasetInfo(name, 3, "function", (file,), "MIT", "papers"))
    return file


def cached_files(tmp_path) -> list[str]:
    root = tmp_path / "cache" / "data"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_fetch_downloads_checks_lists_and_loads(server, monkeypatch, tmp_path, capsys):
    file = tiny(monkeypatch)
    server.serve_github("someone/bench", "c0ffee", "data/tiny.jsonl", TINY)
    assert main(["data", "list", "--json"]) == 0
    row = next(json.loads(line) for line in capsys.readouterr().out.splitlines() if '"tiny"' in line)
    assert row["cached"] is False and row["sha256"] == [TINY_SHA]
    assert main(["data", "fetch", "tiny"]) == 0
    assert (data_cache() / file.local).read_bytes() == TINY
    assert cached_files(tmp_path) == ["tiny.jsonl"]  # no temporary file left beside it
    assert [t.id for t in load_dataset("tiny")] == ["Mini/1", "Mini/2", "Mini/3"]
    main(["data", "list", "--json"])
    row = next(json.loads(line) for line in capsys.readouterr().out.splitlines() if '"tiny"' in line)
    assert row["cached"] is True and row["paths"] == [str(data_cache() / "tiny.jsonl")]
    requests = len(server.requests)
    assert main(["data", "fetch", "tiny"]) == 0  # already there with its hash: nothing downloaded
    assert len(server.requests) == requests and "already cached" in capsys.readouterr().err


def test_checksum_mismatch_caches_nothing_and_says_how_to_place_the_file(server, monkeypatch, tmp_path, capsys):
    file = tiny(monkeypatch)
    server.serve_github("someone/bench", "c0ffee", "data/tiny.jsonl", TINY.replace(b"Mini/1", b"Evil/1"))
    assert main(["data", "fetch", "tiny"]) == 2
    message = " ".join(capsys.readouterr().err.split())
    assert f"expected {TINY_SHA}" in message and file.url in message
    assert "nothing was cached" in message and "place it by hand" in message and "--data-dir" in message
    assert cached_files(tmp_path) == []


def test_a_connection_dropped_mid_file_is_resumed_never_left_partial(server, monkeypatch, tmp_path):
    tiny(monkeypatch)
    path = "/raw.githubusercontent.com/someone/bench/c0ffee/data/tiny.jsonl"
    server.serve_github("someone/bench", "c0ffee", "data/tiny.jsonl", TINY)
    server.drop_first.add(path)
    assert main(["data", "fetch", "tiny"]) == 0
    gets = [r for r in server.requests if r[1] == path]
    assert len(gets) == 2 and gets[0][2] is None and gets[1][2] == f"bytes={len(TINY) // 2}-"
    assert (data_cache() / "tiny.jsonl").read_bytes() == TINY and cached_files(tmp_path) == ["tiny.jsonl"]


def test_offline_fails_at_once_naming_the_file_and_solve_names_the_fetch_command(server, monkeypatch, tmp_path,
                                                                                 capsys):
    tiny(monkeypatch)
    with socket.socket() as closed:  # a port nobody listens on: the host cannot be reached
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("CODEFOREST_DATA_MIRROR", f"http://127.0.0.1:{port}")
    assert main(["data", "fetch", "tiny"]) == 2
    message = " ".join(capsys.readouterr().err.split())
    assert "cannot reach 127.0.0.1" in message and "offline?" in message and TINY_SHA in message
    assert cached_files(tmp_path) == []
    # solve and bench never download: the missing dataset is refused before any model call (none listens there)
    bench = ["bench", "--graph", "direct", "--dataset", "tiny", "--out", str(tmp_path / "runs")]
    for command in (["solve", "--dataset", "tiny", "--problem", "Mini/1"], bench):
        assert main([*command, "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m"]) == 2
        assert "run `codeforest data fetch tiny`" in " ".join(capsys.readouterr().err.split())


def test_verify_catches_a_changed_file(server, monkeypatch, capsys):
    tiny(monkeypatch)
    server.serve_github("someone/bench", "c0ffee", "data/tiny.jsonl", TINY)
    assert main(["data", "fetch", "tiny"]) == 0
    capsys.readouterr()
    assert main(["data", "verify"]) == 0
    assert capsys.readouterr().out.startswith(f"ok        {TINY_SHA}")
    (data_cache() / "tiny.jsonl").write_bytes(TINY + b"\n")
    assert main(["data", "verify", "tiny"]) == 1
    message = " ".join(capsys.readouterr().err.split())
    assert f"expected {TINY_SHA}" in message and "`codeforest data fetch tiny` downloads it again" in message
    assert main(["data", "fetch", "tiny"]) == 0 and main(["data", "verify"]) == 0
    assert (data_cache() / "tiny.jsonl").read_bytes() == TINY


def test_release_asset_without_a_pinned_hash_is_recorded_at_first_fetch_then_checked(server, monkeypatch,
                                                                                     tmp_path, capsys):
    file = SourceFile("release", "someone/bench_release", "v1", "tiny.jsonl", "tiny.jsonl")
    monkeypatch.setitem(DATASETS, "tiny", DatasetInfo("tiny", 3, "function", (file,), "MIT", "papers"))
    server.serve_release("someone/bench_release", "v1", "tiny.jsonl", TINY)
    assert main(["data", "fetch", "tiny"]) == 0
    assert "first fetch" in capsys.readouterr().err
    assert pins()["tiny.jsonl"] == {"sha256": TINY_SHA, "revision": "v1", "source": file.origin}
    (data_cache() / "tiny.jsonl").unlink()
    server.serve_release("someone/bench_release", "v1", "tiny.jsonl", TINY + b"\n")  # the asset changed upstream
    assert main(["data", "fetch", "tiny"]) == 2
    assert f"expected {TINY_SHA}" in " ".join(capsys.readouterr().err.split())
    assert cached_files(tmp_path) == ["pins.json"]


def test_hub_file_is_pinned_to_the_commit_it_resolved_to(server, monkeypatch, tmp_path, capsys):
    tiny(monkeypatch, kind="hub", sha256=None)
    server.serve_hub("someone/bench", "data/tiny.jsonl", TINY)
    assert main(["data", "fetch", "tiny"]) == 0
    assert pins()["tiny.jsonl"]["revision"] == HUB_COMMIT and pins()["tiny.jsonl"]["sha256"] == TINY_SHA
    assert (data_cache() / "tiny.jsonl").read_bytes() == TINY
    capsys.readouterr()
    assert main(["data", "list"]) == 0
    assert f"tiny.jsonl at its first fetch: revision {HUB_COMMIT}, sha256 {TINY_SHA}" in capsys.readouterr().out
    assert [t.id for t in load_dataset("tiny")] == ["Mini/1", "Mini/2", "Mini/3"]
    (data_cache() / "tiny.jsonl").unlink()
    server.requests.clear()
    server.serve_hub("someone/bench", "data/tiny.jsonl", TINY.replace(b"Mini", b"Maxi"))
    assert main(["data", "fetch", "tiny"]) == 2
    assert f"expected {TINY_SHA}" in " ".join(capsys.readouterr().err.split())
    assert all(f"/resolve/{HUB_COMMIT}/" in path for _, path, _ in server.requests)  # the recorded commit, not main
    assert cached_files(tmp_path) == ["pins.json"]


def test_hub_offline_mode_is_refused_in_a_fresh_process(server, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": server.url, "CODEFOREST_CACHE": str(tmp_path / "c")}
    done = subprocess.run([sys.executable, "-m", "codeforest.cli", "data", "fetch", "livecodebench_v1"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "HF_HUB_OFFLINE is set" in " ".join(done.stderr.split()) and server.requests == []
    assert not (tmp_path / "c" / "data" / "livecodebench" / "test.jsonl").exists()


def test_the_papers_files_fetched_from_their_pinned_paths_verify_against_the_data_folder(server, data_dir, capsys):
    papers = [info for info in DATASETS.values() if info.format == "papers"]
    for info in papers:
        file = info.files[0]
        server.serve_github(file.repo, file.ref, file.path, (data_dir / file.local).read_bytes())
    assert main(["data", "fetch", *(info.name for info in papers)]) == 0
    assert main(["data", "verify"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and all(line.startswith("ok ") for line in lines)


def test_fetching_an_evalplus_release_computes_its_expected_outputs_once(server, monkeypatch, capsys):
    data = gzip.compress((FIXTURES / "evalplus" / "HumanEvalPlus.jsonl").read_bytes())
    file = SourceFile("release", "someone/plus_release", "v1", "HumanEvalPlus.jsonl.gz", "tinyplus.jsonl.gz",
                      hashlib.sha256(data).hexdigest())
    monkeypatch.setitem(DATASETS, "tinyplus", DatasetInfo("tinyplus", 2, "function", (file,), "MIT",
                                                          "humaneval_plus"))
    server.serve_release("someone/plus_release", "v1", "HumanEvalPlus.jsonl.gz", data)
    assert main(["data", "fetch", "tinyplus"]) == 0
    assert "tinyplus: 2 problems ready" in capsys.readouterr().err
    assert (data_cache() / "tinyplus.jsonl.gz.expected.jsonl").is_file()
    assert [t.plus_tests is not None for t in load_dataset("tinyplus")] == [True, True]
