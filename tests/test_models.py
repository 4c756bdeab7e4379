"""The model factory: assembling a GGUF from part packages, clear errors, endpoint models."""

from __future__ import annotations

import hashlib
import socket
import sys

import pytest

from codeforest.context import Context
from codeforest.tools.models import (
    EmbeddedModel,
    EmbeddedServer,
    ModelError,
    embedded_spec,
    ensure_model_file,
    get_chat_model,
    resolve_gguf,
)


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Three installed 'part packages' on sys.path, like the real ones on PyPI."""
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]
    for n, chunk in enumerate(chunks, 1):
        data = tmp_path / "site" / f"fakemodel_part{n}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"part{n:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("CODEFOREST_CACHE", str(tmp_path / "cache"))
    whole = b"".join(chunks)
    yield EmbeddedModel("fake-model", "local", "fakemodel_part{n}", 3, len(whole), hashlib.sha256(whole).hexdigest())
    for n in range(1, 4):
        sys.modules.pop(f"fakemodel_part{n}", None)


def test_assembles_once_and_reuses(fake_parts, tmp_path):
    messages = []
    path = ensure_model_file(fake_parts, progress=messages.append)
    assert path == tmp_path / "cache" / "models" / "fake-model.gguf"
    assert path.read_bytes().startswith(b"GGUF") and path.stat().st_size == fake_parts.size
    mtime = path.stat().st_mtime_ns
    assert ensure_model_file(fake_parts, progress=messages.append) == path
    assert path.stat().st_mtime_ns == mtime and len(messages) == 1  # assembled once, then reused


def test_checksum_mismatch_is_reported_and_leaves_nothing(fake_parts, tmp_path):
    wrong = EmbeddedModel(**{**fake_parts.__dict__, "sha256": "0" * 64})
    with pytest.raises(ModelError, match="Checksum mismatch.*pip install --force-reinstall"):
        ensure_model_file(wrong)
    assert not list((tmp_path / "cache" / "models").glob("*.gguf*tmp*"))
    assert not (tmp_path / "cache" / "models" / "fake-model.gguf").exists()


def test_missing_parts_say_which_pip_command_fixes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEFOREST_CACHE", str(tmp_path))
    absent = EmbeddedModel("absent", "local-small", "no_such_part_pkg{n}", 2, 10, "0" * 64)
    with pytest.raises(ModelError, match=r'pip install -e "\.\[local-small\]"  \(run it in the codeforest checkout\)'):
        ensure_model_file(absent)


def test_names_and_paths(tmp_path):
    assert embedded_spec("small").parts == 6 and embedded_spec("1.5B").parts == 22
    assert embedded_spec("gpt-4o") is None and resolve_gguf("gpt-4o") is None
    with pytest.raises(ModelError, match="does not exist"):
        resolve_gguf(str(tmp_path / "mine.gguf"))
    with pytest.raises(ModelError, match="--base-url"):
        get_chat_model(Context(model="gpt-4o"))


def test_endpoint_model_reads_its_key_from_the_named_variable(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-test-123")
    model = get_chat_model(Context(model="gpt-x", base_url="http://127.0.0.1:9/v1", api_key_env="MY_KEY"))
    assert model.model_name == "gpt-x" and model.openai_api_key.get_secret_value() == "sk-test-123"
    assert "sk-test-123" not in repr(model)


def test_busy_port_and_bad_model_file_are_clear_errors(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        bogus = tmp_path / "bogus.gguf"
        bogus.write_bytes(b"not a model")
        with pytest.raises(ModelError, match=f"Port {port} on 127.0.0.1 is busy"):
            EmbeddedServer(bogus, port=port).start()
    with pytest.raises(ModelError, match="failed to start"):
        EmbeddedServer(bogus).start()
