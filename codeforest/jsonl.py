"""Appending records to a JSONL file so that a kill loses at most the line being written."""

from __future__ import annotations

import json
import os
from pathlib import Path


def append_record(path: str | os.PathLike, record: dict) -> None:
    """Append one JSON line, flushed and synced; a line cut short by an earlier kill gets its own line ended."""
    with open(Path(path), "a+b") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                f.write(b"\n")
        f.write((json.dumps(record) + "\n").encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())
