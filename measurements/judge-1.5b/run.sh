#!/usr/bin/env bash
# Does a stronger judge make a search beat the small model's own resampling at equal cost? The embedded 0.5B writes
# the code, the embedded 1.5B takes the judging roles (CodeTree's Critic, GVR's Verifier and locator, BESTER's
# reflection, the differential selector's Tester and judge); against plain resampling of the 0.5B alone and of the
# 1.5B alone, priced by parameters (0.5 and 1.5 per million tokens: codeforest's default). One ablation: the 1.5B in
# the Critic/Verifier only (BESTER's reflection and the selector's Tester and judge back on the 0.5B).
# Every step is a resumable `codeforest bench` (a rerun skips finished problems): rerun this script to continue.
# Usage: measurements/judge-1.5b/run.sh [humaneval|apps]   (both, in that order, without an argument)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/codeforest ] && PATH="$PWD/.venv/bin:$PATH"
command -v codeforest > /dev/null || { echo "codeforest is not installed: run the README's set-up first" >&2; exit 1; }
export CODEFOREST_LLAMA_SETTINGS='{"n_cache_reuse": 256, "cache_ram_mib": 1024, "kv_unified": false}'

run() {  # DATASET OUT FOLDER OF THE SAME PROBLEMS' 1.5B RUNS (its response cache replays the 1.5B's resampling)
    local dataset="$1" out="$2" earlier="$3"
    bench() { echo "== $(date -u +%FT%TZ) $*"; codeforest bench --dataset "$dataset" --sample 20 --seed 5 \
        --out "$out" --request-timeout 7200 --retry-errors "$@"; }
    # the baselines: plain resampling, each model alone (the 1.5B's calls replay from the earlier run's cache)
    bench --graph resample --model small --cache "$out/responses.sqlite"
    bench --graph resample --model local --cache "$earlier/responses.sqlite"
    # the small model writing, the 1.5B judging (each graph's judging roles; a role a graph never calls is refused,
    # so each graph gets its own)
    bench --graph codetree --model small --role critic=local --cache "$out/responses.sqlite"
    bench --graph gvr --model small --role verifier=local --role locator=local --cache "$out/responses.sqlite"
    bench --graph bester --model small --role reflection=local --cache "$out/responses.sqlite"
    CODEFOREST_RESAMPLE_N=8 bench --graph resample --model small --selector differential --min-candidates 8 \
        --role tester=local --role judge=local --cache "$out/responses.sqlite"
    # the ablation: the 1.5B in the Critic/Verifier only (codetree and gvr above already are); BESTER and the
    # differential selector with the 0.5B alone
    bench --graph bester --model small --cache "$out/responses.sqlite"
    CODEFOREST_RESAMPLE_N=8 bench --graph resample --model small --selector differential --min-candidates 8 \
        --cache "$out/responses.sqlite"
    codeforest report "$out"
}

case "${1:-all}" in
    humaneval) run humaneval measurements/judge-1.5b/humaneval measurements/humaneval-fair-1.5b ;;
    apps) run apps_introductory150 measurements/judge-1.5b/apps-intro measurements/apps-intro-1.5b ;;
    all) run humaneval measurements/judge-1.5b/humaneval measurements/humaneval-fair-1.5b
         run apps_introductory150 measurements/judge-1.5b/apps-intro measurements/apps-intro-1.5b ;;
    *) echo "usage: $0 [humaneval|apps]" >&2; exit 2 ;;
esac
