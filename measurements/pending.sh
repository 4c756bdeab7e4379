#!/usr/bin/env bash
# The model runs the open measurements still need, one after another (one model job at a time: two at once on
# 2 CPU cores are slower than in turn, and each would skew the other's wall times). Every step resumes where it
# stopped, so rerun this script on a new machine and it continues. Usage:
#   measurements/pending.sh CODETREE_CHECKOUT RPM_MCTS_CHECKOUT RETHINKMCTS_CHECKOUT CODEPRM_CHECKOUT
# (checkouts of the released repositories at the commits measurements/conformance/README.md names).
#  1. The conformance recordings and their replays (issue 58): conformance/queue.sh, which only replays a dataset
#     recorded whole; then the wall time of each dataset recorded whole and not timed alone yet
#     (conformance/speed.sh).
#  2. GVR on the APPS-interview dev sample at its default value, the paper's (gvr_reward=pub_prm), beside the
#     committed gvr_reward=pub_test row, and plain resampling given its mean tokens: the same bench settings as that
#     row (queue.sh), on the same response cache, so the calls both rows make replay.
#  3. The stronger judge (issue 59): judge-1.5b/run.sh.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
[ -x .venv/bin/codeforest ] && PATH="$PWD/.venv/bin:$PATH"
command -v codeforest > /dev/null || { echo "codeforest is not installed: run the README's set-up first" >&2; exit 1; }
[ $# -eq 4 ] || { sed -n '2,6p' "$0" >&2; exit 2; }

echo "== $(date -u +%FT%TZ) conformance recordings"
measurements/conformance/queue.sh "$@"

# The wall time of each dataset recorded whole and not timed alone yet, released against codeforest at 1 s a reply,
# with no other job on the machine; then the README's table again.
declare -A checkout=([codetree]="$1" [rpm_mcts]="$2" [rethink_mcts]="$3" [codeprm]="$4")
C=measurements/conformance
for replayed in "$C"/*/*.replay.jsonl; do
    method="$(basename "$(dirname "$replayed")")" dataset="$(basename "$replayed" .replay.jsonl)"
    # timed already with no other model job on the machine (the first timings ran beside the recordings)
    grep -qs '"alone": true' "$C/$method/$dataset.speed.json" && continue
    python3 "$C/whole.py" "$replayed" || continue
    kb=()
    if [ "$method" = rpm_mcts ]; then  # the knowledge base built beforehand, so that codeforest's time leaves it out
        kb=(-- --kb "${HOME}/.cache/codeforest/conformance/rpm-kb")
        python "$C/rpm_mcts/replay.py" "${checkout[$method]}" --dataset "$dataset" "${kb[@]:1}" \
            --out-dir "$(mktemp -d)" > /dev/null || continue
    fi
    echo "== $(date -u +%FT%TZ) speed: $method $dataset"
    DELAY=1 "$C/speed.sh" "$method" "${checkout[$method]}" "$C/$method/$dataset.calls.jsonl" \
        "$C/$method/$dataset.finals.jsonl" "$dataset" "${kb[@]}" || echo "speed: $method $dataset failed" >&2
done
python "$C/table.py" --readme > /dev/null

# Each row as queue.sh's bench: 4 problems at once on a 4-slot server, one KV cache per slot.
bench_row() {  # OUT CACHE DATASET BENCH-ARGS...
    local out="$1" cache="$2" dataset="$3"; shift 3
    echo "== $(date -u +%FT%TZ) $out: $*"
    CODEFOREST_LLAMA_SETTINGS='{"n_cache_reuse": 256, "cache_ram_mib": 2048, "kv_unified": false}' \
        codeforest bench --model local --cache "$cache" --seed 5 --sample 20 --concurrency 4 --request-timeout 7200 \
        --retry-errors --dataset "$dataset" --out "$out" "$@"
}
# A search row that stopped short (not every problem run: exit status other than 0 or 3) leaves its resampling row
# for a rerun of this script: resampling gets the search's mean tokens, which must be over every problem.
whole_row() {  # bench_row's arguments: true when the row ran every problem
    local status=0
    bench_row "$@" || status=$?
    [ "$status" = 0 ] || [ "$status" = 3 ] ||
        { echo "$1 stopped short (exit status $status): rerun this script to continue it" >&2; false; }
}
AV=measurements/apps-interview-1.5b
if whole_row "$AV" "$AV/responses.sqlite" apps_interview150 --graph gvr; then
    CODEFOREST_RESAMPLE_N=1000 bench_row "$AV" "$AV/responses.sqlite" apps_interview150 --graph resample --tokens-of gvr
fi

echo "== $(date -u +%FT%TZ) the stronger judge"
measurements/judge-1.5b/run.sh
echo "== $(date -u +%FT%TZ) pending measurements done"
