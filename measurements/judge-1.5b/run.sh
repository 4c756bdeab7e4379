#!/usr/bin/env bash
# Does a stronger judge make a search beat the small model's own resampling at equal cost? The embedded 0.5B writes
# the code, the embedded 1.5B takes the judging roles (CodeTree's Critic, GVR's Verifier, BESTER's
# reflection, the differential selector's Tester and judge); against plain resampling of the 0.5B alone and of the
# 1.5B alone, priced by parameters (0.5 and 1.5 per million tokens: codeforest's default), at their defaults (20
# programs) and at each search's mean cost. One ablation: the 1.5B in the Critic/Verifier only (BESTER's reflection
# and the selector's Tester and judge back on the 0.5B).
# Every step is a resumable `codeforest bench` (a rerun skips finished problems): rerun this script to continue.
# Usage: measurements/judge-1.5b/run.sh [humaneval|apps]   (both, in that order, without an argument)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/codeforest ] && PATH="$PWD/.venv/bin:$PATH"
command -v codeforest > /dev/null || { echo "codeforest is not installed: run the README's set-up first" >&2; exit 1; }
export CODEFOREST_LLAMA_SETTINGS='{"n_cache_reuse": 256, "cache_ram_mib": 1024, "kv_unified": false}'
# The rows' wall times are compared: another model job on the machine would slow some rows and not others (checked
# before each dataset: the second starts hours after the first).
source measurements/model_jobs.sh
alone() {
    if model_jobs >&2; then
        echo "another model job is running (above): its rows' wall times would not compare; stop it first" >&2; exit 1
    fi
}

run() {  # DATASET OUT: every row of the comparison, one after another on one machine
    local dataset="$1" out="$2"
    alone
    # Each row has a response cache of its own: a row sharing another's cache would replay the calls both make
    # (the same first prompt at the same temperature) and report less wall time than it took.
    # 4 problems at once, on servers with 4 slots each, as the other measurement queues run: batched decoding gives
    # about 1.8x the tokens a second of one stream on 2 cores; every row runs so, so their wall times compare.
    # A row that stops short (Ctrl-C, a crash) leaves the at-cost rows for a rerun: their budgets are the searches'
    # mean costs, which must be over every problem. A row that ran every problem, some of them into an error (exit
    # status 3), is whole: a problem whose graph raised is left out of its mean cost, as the report leaves it out.
    local failed=0
    bench() { local label="$1" status=0; shift; echo "== $(date -u +%FT%TZ) $label: $*"
        codeforest bench --dataset "$dataset" --sample 20 --seed 5 --out "$out" --request-timeout 7200 \
            --concurrency 4 --retry-errors --cache "$out/cache/$label.sqlite" "$@" || status=$?
        if [ "$status" != 0 ] && [ "$status" != 3 ]; then
            failed=1; echo "$label stopped short (exit status $status): rerun this script to continue it" >&2
        fi; }
    # the baselines: plain resampling, each model alone
    bench resample-small --graph resample --model small
    bench resample-local --graph resample --model local
    # the small model writing, the 1.5B judging (each graph's judging roles; a role a graph never calls is refused,
    # so each graph gets its own)
    bench codetree-critic --graph codetree --model small --role critic=local
    bench gvr-verifier --graph gvr --model small --role verifier=local  # no locator call at GVR's defaults
    bench bester-reflection --graph bester --model small --role reflection=local
    CODEFOREST_RESAMPLE_N=8 bench differential-judged --graph resample --model small --selector differential \
        --min-candidates 8 --role tester=local --role judge=local
    # the ablation: the 1.5B in the Critic/Verifier only (codetree and gvr above already are); BESTER and the
    # differential selector with the 0.5B alone
    bench bester-small --graph bester --model small
    CODEFOREST_RESAMPLE_N=8 bench differential-small --graph resample --model small --selector differential \
        --min-candidates 8
    # plain resampling of each model at each search's mean cost per problem (as many samples as fit; a sweep shares
    # its cache, and a replayed call counts the seconds it took when made, so the wall times stay comparable)
    local budgets
    [ "$failed" = 0 ] || { echo "$dataset: the at-cost rows wait for every search row to finish" >&2; return 1; }
    budgets="$(search_costs "$out")" || return 1
    if [ -n "$budgets" ]; then
        CODEFOREST_RESAMPLE_N=1000 bench resample-small-at-cost --graph resample --model small --cost-budget "$budgets"
        CODEFOREST_RESAMPLE_N=1000 bench resample-local-at-cost --graph resample --model local --cost-budget "$budgets"
    fi
    codeforest report "$out"
}

search_costs() {  # RESULTS_FOLDER: each search row's mean cost per problem as the report shows it, comma-separated
    # (3 significant digits, rounded down: a budget above the search's mean could make its resampling row spend more
    # than the search, and the report pairs a search only with resampling at no more cost)
    python3 - "$1" <<'PY'
import math, sys
from codeforest.bench import latest_records, read_results, run_label
from codeforest.report import plain_resample, summarize
records = read_results(sys.argv[1])
searches = {(run_label(r), r.get("model")) for r in latest_records(records) if not plain_resample(r)}
def floor3(x):  # down to 3 significant digits (the 1e-9 keeps 0.011 from becoming 0.010 in binary floating point)
    step = 10 ** (math.floor(math.log10(x)) - 2)
    return math.floor(x / step + 1e-9) * step
means = {f"{floor3(row['mean_cost']):.3g}" for row in summarize(records)
         if (row["graph"], row["model"]) in searches and row["mean_cost"]}
print(",".join(sorted(means, key=float)))
PY
}

case "${1:-all}" in
    humaneval) run humaneval measurements/judge-1.5b/humaneval ;;
    apps) run apps_introductory150 measurements/judge-1.5b/apps-intro ;;
    all) run humaneval measurements/judge-1.5b/humaneval
         run apps_introductory150 measurements/judge-1.5b/apps-intro ;;
    *) echo "usage: $0 [humaneval|apps]" >&2; exit 2 ;;
esac
