"""Appending records to a JSONL file so that a kill loses at most the line being written."""

from __future__ import annotations

import json
import os
from pathlib import Path


def append_record(path: str | os.PathLike, record: dict) -> None:
    """Append one JSON line, flushed and synced; a line cut short by an earlier kill gets its own line ended."""
    append_records(path, [record])


def append_records(path: str | os.PathLike, records: list[dict]) -> None:
    """Append JSON lines in one write, flushed and synced (a kill keeps all of them or cuts the last short)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(Path(path), "a+b") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                f.write(b"\n")
        f.write("".join(json.dumps(r) + "\n" for r in records).encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def rewrite_records(path: str | os.PathLike, records: list[dict]) -> None:
    """Replace a JSONL file by ``records`` atomically (a kill leaves either the old file or the new one)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_records(path: str | os.PathLike) -> tuple[list[dict], int]:
    """The JSON object lines of a file and how many lines could not be read (e.g. one cut short by a kill)."""
    records, unreadable = [], 0
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            unreadable += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            unreadable += 1
    return records, unreadable
