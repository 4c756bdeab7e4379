#!/usr/bin/env bash
# Every conformance recording, one after another (two model servers at once on 2 cores are slower than in turn), then
# the replays. Each step resumes where it stopped: rerun this script on a new machine and it continues. Usage:
#   measurements/conformance/queue.sh CODETREE_CHECKOUT [RPM_MCTS_CHECKOUT [RETHINKMCTS_CHECKOUT [CODEPRM_CHECKOUT]]]
# (a checkout of each released repository at the commit the README names; see README.md).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
codetree="${1:?the path of a CodeTree checkout}"
rpm="${2:-}"
rethink="${3:-}"
codeprm="${4:-}"
for dataset in humaneval apps; do
    "$here/codetree/record.sh" "$codetree" "$dataset" || echo "codetree $dataset: the recording stopped ($?)" >&2
    python "$here/codetree/replay.py" "$codetree" --dataset "$dataset" || echo "codetree $dataset: replay failed" >&2
done
[ -z "$rpm" ] || "$here/rpm_mcts/record.sh" "$rpm" || echo "rpm_mcts: the recording stopped ($?)" >&2
[ -z "$rethink" ] || "$here/rethink_mcts/record.sh" "$rethink" || echo "rethink_mcts: the recording stopped ($?)" >&2
[ -z "$codeprm" ] || "$here/codeprm/record.sh" "$codeprm" || echo "codeprm: the recording stopped ($?)" >&2
python "$here/table.py" --readme
