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
for method in rpm_mcts rethink_mcts codeprm; do
    case "$method" in rpm_mcts) checkout="$rpm" ;; rethink_mcts) checkout="$rethink" ;; codeprm) checkout="$codeprm" ;; esac
    [ -n "$checkout" ] || continue
    "$here/$method/record.sh" "$checkout" || echo "$method: the recording stopped ($?)" >&2
    python "$here/$method/replay.py" "$checkout" || echo "$method: replay failed" >&2
done
python "$here/table.py" --readme
