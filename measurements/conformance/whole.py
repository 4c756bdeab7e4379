"""Whether a dataset's last replay found all five of its problems recorded whole (exit status 0, else 1), for
queue.sh and pending.sh: ``python3 whole.py METHOD/DATASET.replay.jsonl``."""

import json
import sys

try:
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
except OSError:
    sys.exit(1)
sys.exit(0 if len(rows) >= 5 and all(row.get("recorded_whole") for row in rows) else 1)
