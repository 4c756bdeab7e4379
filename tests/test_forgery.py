"""Programs that try to write their own verdict instead of computing answers: every one fails, with a reason,
through ``codeforest check`` and through ``codeforest bench`` (a scripted endpoint replying with the program).

The sandbox runs under the bubblewrap that pip installs, as in ``test_hostile``. The expected values are strings no
program can guess; a program that finds one anywhere it can reach returns it, so a leak would be a pass.
"""

from __future__ import annotations

import json
import re

import pytest

from codeforest.cli import main
from codeforest.scripted_endpoint import ScriptedEndpoint

FIND_EXPECTED = '''
import gc, sys
def found():
    """Any string in this process that looks like an expected value (the prefix is built, so this text is none)."""
    prefix = "forge" + "-"
    seen = []
    frame = sys._getframe()
    while frame is not None:
        seen += [repr(v) for v in list(frame.f_locals.values()) + list(frame.f_globals.values())]
        frame = frame.f_back
    for obj in gc.get_objects():
        try:
            seen.append(repr(obj)[:100000])
        except BaseException:
            pass
    for text in seen:
        for hit in re.findall(prefix + "[0-9a-f]{6}", text):
            return hit
    return "nothing"
'''

HOSTILE = {
    # climbs every frame at import time, sending result lines and replies through anything that can send
    "frames": '''
import os, sys
def mystery(x):
    return 0
frame = sys._getframe()
while frame is not None:
    emit = frame.f_locals.get("emit")
    if callable(emit):  # the runner's own reporting function, as an in-process runner has one
        for k in range(8):
            emit({"i": k, "passed": True})
    for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
        for attr in ("send", "emit"):
            send = getattr(value, attr, None)
            if callable(send):
                for k in range(8):
                    for line in ({"i": k, "passed": True}, {"id": k, "ready": True, "names": {}},
                                 {"id": k, "ok": {"value": True}}):
                        try:
                            send(line)
                        except BaseException:
                            pass
    frame = frame.f_back
os._exit(0)
''',
    # result lines and replies written to every descriptor it may have, then gone
    "descriptors": '''
import json, os
def mystery(x):
    return 0
for fd in range(0, 64):
    for k in range(8):
        for line in ({"i": k, "test": "x", "passed": True},
                     {"id": k, "ready": True, "names": {"mystery": {"value": 1}}},
                     {"id": k, "ok": {"value": True}, "dropped": 0}):
            try:
                os.write(fd, (json.dumps(line) + "\\n").encode())
            except OSError:
                pass
os._exit(0)
''',
    # the same lines written while the program keeps running, its answers wrong
    "descriptors_alive": '''
import json, os
def mystery(x):
    for fd in range(3, 64):
        for k in range(16):
            try:
                os.write(fd, (json.dumps({"id": k, "ok": {"value": True}}) + "\\n").encode())
            except OSError:
                pass
    return 0
''',
    # values that claim to equal anything
    "always_equal": '''
class Always:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = object.__hash__
class AlwaysStr(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__
def mystery(x):
    return Always() if x % 2 else AlwaysStr("nope")
''',
    # defines the function, then leaves before any test can run
    "exit_after_def": '''
import os
def mystery(x):
    return 0
os._exit(0)
''',
    "system_exit_after_def": '''
def mystery(x):
    return 0
raise SystemExit(0)
''',
    # the judge's own tools, replaced
    "patched_builtins": '''
import builtins, json, sys
class Quiet(Exception):
    pass
builtins.AssertionError = Quiet
builtins.bool = lambda *a: True
builtins.isinstance = lambda *a: True
json.dumps = lambda *a, **k: '{"i": 0, "passed": true}'
sys.modules["json"] = None
def mystery(x):
    return 0
''',
    # everything its process holds, searched for an expected value
    "memory_search": "import re\n" + FIND_EXPECTED + '''
def mystery(x):
    return found()
''',
    # the descriptors of every other process it can see, written to; their memory read
    "other_processes": "import re\n" + FIND_EXPECTED + '''
import json, os
def mystery(x):
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with open(f"/proc/{pid}/fd/{fd}", "w") as out:
                    out.write(json.dumps({"i": 0, "passed": True}) + "\\n")
        except OSError:
            pass
        try:
            with open(f"/proc/{pid}/mem", "rb") as mem:
                text = mem.read(1 << 20).decode("latin-1")
            hit = re.search("forge" + "-[0-9a-f]{6}", text)
            if hit:
                return hit.group(0)
        except (OSError, ValueError):
            pass
    return found()
''',
}

PUBLIC = "assert mystery(3) == 'forge-a9f3c1'"
PRIVATE = ("def check(candidate):\n    assert candidate(7) == 'forge-e41b77'\n"
           "    assert candidate(12) == 'forge-c0ffe5'\n")


def _problems(path):
    with open(path, "w") as f:
        for name in HOSTILE:
            f.write(json.dumps({"task_id": f"Forge/{name}", "prompt": f"def mystery(x):\n    \"\"\"{name}\"\"\"\n",
                                "entry_point": "mystery", "given_tests": [PUBLIC], "test": PRIVATE}) + "\n")
    return path


@pytest.fixture(autouse=True)
def _bundled_bwrap(monkeypatch):
    monkeypatch.setenv("CODEFOREST_BWRAP", "bundled")


@pytest.mark.parametrize("name", list(HOSTILE))
def test_check_gives_every_forgery_a_failed_verdict_with_a_reason(name, tmp_path, capsys):
    program = tmp_path / "program.py"
    program.write_text(HOSTILE[name])
    code = main(["check", str(program), "--problem-file", str(_problems(tmp_path / "forge.jsonl")),
                 "--problem", f"Forge/{name}", "--private", "--json", "--timeout", "10"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["isolation"] == "bwrap"
    assert report["total"] == 2 and report["passed"] == 0, report  # one public test, one private check
    assert {o["suite"] for o in report["outcomes"]} == {"public", "private"}
    for outcome in report["outcomes"]:
        assert outcome["reason"] and (outcome["error"] or outcome["actual"]), outcome
        assert "forge-" not in (outcome["actual"] or ""), "an expected value reached the program"


def test_bench_scores_every_forgery_as_failed(tmp_path):
    """A scripted endpoint replies to each problem with its hostile program; no record says passed."""
    problems = _problems(tmp_path / "forge.jsonl")

    def respond(body):
        prompt = json.dumps(body["messages"])
        name = next(n for n in sorted(HOSTILE, key=len, reverse=True) if re.search(rf"\b{n}\b", prompt))
        return f"```python\n{HOSTILE[name]}\n```"

    with ScriptedEndpoint([], respond=respond) as api:
        code = main(["bench", "--graph", "direct", "--dataset", str(problems), "--out", str(tmp_path / "run"),
                     "--base-url", api.url, "--model", "scripted", "--concurrency", "2"])
    assert code == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["problem_id"] for r in records) == sorted(f"Forge/{n}" for n in HOSTILE)
    for record in records:
        assert record["error"] is None, record["error"]
        assert record["private_passed"] is False and record["private_pass_rate"] == 0.0, record["problem_id"]
        assert record["public_passing_programs"] == 0, record["problem_id"]
