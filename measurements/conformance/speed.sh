#!/usr/bin/env bash
# The wall time of a released search and of codeforest's graph on the same replies: a call log (a recording, or a
# scripted smoke) is served with every reply after DELAY seconds (default 1), so that model time is the same for both
# and the rest shows (program runs, the search's own work, what runs in parallel). Usage:
#   measurements/conformance/speed.sh METHOD CHECKOUT LOG FINALS [DATASET] [-- REPLAY_ARGS...]
# METHOD is codetree, rpm_mcts, rethink_mcts or codeprm; CHECKOUT its released repository; LOG and FINALS the calls
# and final programs record.sh wrote; DATASET humaneval or apps (default: the method's record.sh default, humaneval for
# CodeTree and RethinkMCTS, apps for RPM-MCTS and CodePRM); REPLAY_ARGS go to METHOD/replay.py (for
# RPM-MCTS: --kb FOLDER, a knowledge base already built). The released code runs its record.sh against a replaying
# recorder (its setup is a second or two of the time); codeforest's replay.py serves the log itself. Writes
# METHOD/NAME.speed.json, NAME being LOG's file name without .calls.jsonl.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
method="${1:?codetree, rpm_mcts, rethink_mcts or codeprm}"
checkout="$(cd "${2:?the path of a checkout of the released repository}" && pwd)"
log="$(realpath "${3:?a call log}")"
finals="$(realpath "${4:?its finals file}")"
shift 4
dataset=""
if [ "${1:-}" != "" ] && [ "${1:-}" != "--" ]; then dataset="$1"; shift; fi
# CodeTree's record.sh takes the dataset as an argument, the others' as CONFORMANCE_DATASET
record_args=() replay_dataset=()
unset CONFORMANCE_DATASET  # no dataset given: each side's own default
if [ -n "$dataset" ]; then
    replay_dataset=(--dataset "$dataset")
    if [ "$method" = codetree ]; then record_args=("$dataset"); else export CONFORMANCE_DATASET="$dataset"; fi
fi
[ "${1:-}" = "--" ] && shift
delay="${DELAY:-1}"
name="$(basename "$log" .calls.jsonl)"
scratch="$(mktemp -d /tmp/conformance-speed-XXXXXX)"

# Another model job on the machine (a recording, a bench) slows the program runs of one side more than the other's:
# the time is marked as taken alone only when none was running as it started or as it ended.
source "$here/../model_jobs.sh"
alone=true
model_jobs > /dev/null && alone=false

# another recorder there would answer this run's calls (record_common.sh checks the released run's 8097)
if curl -sf http://127.0.0.1:8096/v1/models > /dev/null; then echo "port 8096 is in use" >&2; exit 2; fi
codeforest recorder --log "$log" --misses "$scratch/misses.jsonl" --delay "$delay" --port 8096 \
    > "$scratch/recorder.log" 2>&1 & recorder=$!
trap 'kill $recorder 2>/dev/null || true; wait' EXIT  # it is killed before the replay already
until curl -sf http://127.0.0.1:8096/v1/models > /dev/null; do sleep 1; done

started=$(date +%s.%N)
RECORD_UPSTREAM=http://127.0.0.1:8096/v1 RECORD_PORT=8097 RECORD_LOG="$scratch/calls.jsonl" \
    RECORD_FINALS="$scratch/finals.jsonl" CONFORMANCE_LOG="$scratch/calls.jsonl" \
    CONFORMANCE_FINALS="$scratch/finals.jsonl" CONFORMANCE_OUT="$scratch/run" CONFORMANCE_PARALLEL=1 \
    "$here/$method/record.sh" "$checkout" "${record_args[@]}" > "$scratch/released.log" 2>&1 \
    || { echo "the released run failed: see $scratch/released.log" >&2; exit 1; }
released=$(python3 -c "print(round($(date +%s.%N) - $started, 1))")
kill $recorder  # a replaying recorder hands each reply out once: codeforest's replay serves the log itself

replay=(--log "$log" --finals "$finals" --delay "$delay" --out-suffix speed --out-dir "$scratch" "${replay_dataset[@]}")
started=$(date +%s.%N)
python "$here/$method/replay.py" "$checkout" "${replay[@]}" "$@" > "$scratch/replay.log" 2>&1
codeforest_s=$(python3 -c "print(round($(date +%s.%N) - $started, 1))")

model_jobs > /dev/null && alone=false
calls=$(wc -l < "$log")
missed=0
[ -f "$scratch/misses.jsonl" ] && missed=$(wc -l < "$scratch/misses.jsonl")
echo "$method on $name ($calls calls, every reply after $delay s):" \
     "released ${released} s, codeforest ${codeforest_s} s; misses $missed; alone: $alone (details in $scratch)"
fields='"method": "%s", "log": "%s", "calls": %s, "delay_s": %s, "released_s": %s, "codeforest_s": %s'
printf "{$fields, \"misses\": %s, \"alone\": %s}\n" \
    "$method" "$name" "$calls" "$delay" "$released" "$codeforest_s" "$missed" "$alone" \
    > "$here/$method/$name.speed.json"
