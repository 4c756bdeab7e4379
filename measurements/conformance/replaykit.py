"""What every method's conformance scripts share: writing a prompts folder, and the divergence sections of a
replay's Markdown table. The scripts put this folder on their path (``sys.path``) to import it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from codeforest.prompts import check_prompts_dir


def write_prompts(files: dict[str, dict], out: Path) -> Path:
    """Write prompt files (name -> its YAML content) into ``out`` and load them back (a broken one fails here)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (out / f"{name}.yaml").write_text(yaml.safe_dump(content, allow_unicode=True, sort_keys=False, width=10**6),
                                          encoding="utf-8")
    check_prompts_dir(out)
    return out


def prompts_command(usage: str, write: Callable[[Path, Path], Path]) -> None:
    """``released_prompts.py CHECKOUT OUT_DIR``: write the folder and print where."""
    if len(sys.argv) != 3:
        raise SystemExit(usage)
    print(write(Path(sys.argv[1]), Path(sys.argv[2])))


def divergence_sections(rows: list[dict], note: Callable[[dict], str] | None = None) -> list[str]:
    """One Markdown section per problem that diverged: its role, the call, an optional note, and the diff."""
    lines: list[str] = []
    for r in rows:
        if r.get("diff"):
            lines += ["", f"### {r['problem']}: {r['first_divergence']}, call {r['call']}", ""]
            lines += [note(r), ""] if note else []
            lines += ["```diff", r["diff"], "```"]
    return lines
