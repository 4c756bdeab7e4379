"""The README's faithfulness table, built from the committed replay results (``*/DATASET.replay.jsonl``) and the
speed comparisons (``*/DATASET.speed.json``) beside this script. ``python measurements/conformance/table.py`` prints
it, ``--readme`` puts it in the README in place of the one there; a test holds the README to it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
METHODS = {"codetree": ("CodeTree", "SalesforceAIResearch/CodeTree @ 72c9c87"),
           "rethink_mcts": ("RethinkMCTS", "SIMONLQY/RethinkMCTS @ 3908cac"),
           "codeprm": ("CodePRM", "SIMONLQY/CodePRM @ 1f54aef"),
           "rpm_mcts": ("RPM-MCTS", "codellm12842/RPM-MCTS @ 9189885")}
HEADER = ["| method | released code | problems | calls matched | first divergence | same program | same tree | "
          "wall time, released : codeforest |", "|---|---|---|---|---|---|---|---|"]


def rows(folder: Path, method: str) -> list[str]:
    """One line per dataset replayed for a method."""
    lines = []
    for results in sorted(folder.glob("*.replay.jsonl")):
        dataset = results.name.split(".")[0]
        replayed = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
        whole = [r for r in replayed if r["recorded_whole"]]
        diverged = [f"{r['problem']}: {r['first_divergence']}" for r in replayed if r.get("first_divergence")]
        speed_file = folder / f"{dataset}.speed.json"
        speed = json.loads(speed_file.read_text(encoding="utf-8")) if speed_file.is_file() else None
        name, release = METHODS[method]
        timing = f"{speed['released_s']:.0f} s : {speed['codeforest_s']:.0f} s" if speed else "not yet"
        if speed and not speed.get("alone", False):
            timing += " (machine shared)"
        progress = f" + {len(replayed) - len(whole)} in progress" if len(whole) < len(replayed) else ""
        lines.append(
            f"| {name} ({dataset}) | {release} | {len(whole)} recorded whole{progress} | "
            f"{sum(r['matched'] for r in replayed)} / {sum(r['recorded_calls'] for r in replayed)} | "
            f"{'; '.join(diverged) or 'none'} | {sum(r['same_final_program'] for r in whole)} / {len(whole)} | "
            f"{sum(bool(r.get('same_shape', r.get('same_selections'))) for r in whole)} / {len(whole)} | "
            f"{timing} |")
    return lines


def table() -> str:
    """The whole table."""
    body = [line for method in METHODS for line in rows(HERE / method, method)]
    return "\n".join(HEADER + body) + "\n"


def update_readme(readme: Path = HERE.parent.parent / "README.md") -> None:
    """Replace the README's faithfulness table (the block of lines from its header row) with the current one."""
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADER[0]))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    readme.write_text("".join(lines[:start]) + table() + "".join(lines[end:]), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--readme"]:
        update_readme()
    print(table(), end="")
