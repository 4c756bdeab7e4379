#!/usr/bin/env bash
# Every conformance recording, then its replay, all on one model server: the methods' recordings run side by side,
# each request on a slot of its own (the server answers as many requests at a time), and the README's table is
# rebuilt at the end. Each step resumes where it stopped: rerun this script on a new machine and it continues (a dataset
# whose last replay found its five problems whole is only replayed). Usage:
#   measurements/conformance/queue.sh CODETREE_CHECKOUT [RPM_MCTS_CHECKOUT [RETHINKMCTS_CHECKOUT [CODEPRM_CHECKOUT]]]
# (a checkout of each released repository at the commit the README names; see README.md). QUEUE_PORT (default 8080)
# is the model server's port; each dataset's recorder listens on QUEUE_PORT+100 and on (clear of speed.sh's 8096-8097).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
codetree="${1:?the path of a CodeTree checkout}"
port="${QUEUE_PORT:-8080}"
declare -A checkouts=([codetree]="$codetree" [rpm_mcts]="${2:-}" [rethink_mcts]="${3:-}" [codeprm]="${4:-}")
# A stream is one method's recording of one dataset: all of them run side by side.
# CodeTree's two datasets are one stream, one after the other: its executor writes each program to test as the same
# file of the checkout (temp_files/temp_test4715.py, the process id fixed by its shim) whatever the dataset.
# RethinkMCTS records its problems 4 at a time, each in its own process and copy of the checkout (its record.sh's
# CONFORMANCE_PARALLEL), on a slot each: its APPS problems take the longest, and their replies decode in one batch.
declare -A parallel=([rethink_mcts]=4)
streams=()
for method in codetree rpm_mcts rethink_mcts codeprm; do
    [ -n "${checkouts[$method]}" ] || continue
    case "$method" in codetree) streams+=("codetree:humaneval apps") ;;
                      rethink_mcts) streams+=("$method:humaneval" "$method:apps") ;;
                      codeprm|rpm_mcts) streams+=("$method:apps" "$method:humaneval") ;;
    esac
done

# One KV cache per slot and a 2 GiB host prompt cache, as measurements/queue.sh: on the shared (unified) cache each
# slot's attention runs over every slot's cells. 16,384 tokens a slot: the released RethinkMCTS cuts a chat to 8,000
# tiktoken tokens, which the embedded model's tokenizer can count as more than 8,192 (gpt-4o-mini, which it was
# written for, takes 128k). A reply the request sets no max_tokens for (RPM-MCTS and RethinkMCTS's LDB chat set none)
# ends at 3,072 new tokens: every longer such reply repeated itself, and one took more than the hour the released
# clients and the recorder wait, so it was asked again without end (see README.md). Engine settings
# only: the recorder logs whatever the model replies, and a replay answers from the log.
engine='{"n_cache_reuse": 256, "cache_ram_mib": 2048, "kv_unified": false, "n_predict": 3072}'
export CODEFOREST_LLAMA_SETTINGS="${CODEFOREST_LLAMA_SETTINGS:-$engine}"
pids=()
trap 'kill "${pids[@]}" "${server:-}" 2>/dev/null; wait' EXIT
# Another server answering on the port would be taken for this one (and its model for the embedded 1.5B).
if curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null; then echo "port $port is in use: set QUEUE_PORT" >&2; exit 2; fi
slots=0  # a slot for each request the streams may send at once
for stream in "${streams[@]}"; do slots=$((slots + ${parallel[${stream%%:*}]:-1})); done
codeforest serve --model local --port "$port" --slots "$slots" --n-ctx 16384 \
    > /tmp/conformance-serve.log 2>&1 & server=$!
until curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null; do
    kill -0 "$server" 2>/dev/null || { cat /tmp/conformance-serve.log >&2; exit 1; }; sleep 2
done
export RECORD_UPSTREAM="http://127.0.0.1:$port/v1"

whole() {  # METHOD DATASET: the last replay found all five problems recorded whole (a rerun would only repeat them)
    python3 "$here/whole.py" "$here/$1/$2.replay.jsonl"
}

record_and_replay() {  # METHOD DATASET RECORDER_PORT: record (unless whole), then replay
    local method="$1" dataset="$2" checkout="${checkouts[$1]}"
    export RECORD_PORT="$3"
    if whole "$method" "$dataset"; then
        echo "$method $dataset: recorded whole; replaying only"
    elif [ "$method" = codetree ]; then
        "$here/codetree/record.sh" "$checkout" "$dataset" || echo "codetree $dataset: the recording stopped ($?)" >&2
    else
        CONFORMANCE_DATASET="$dataset" CONFORMANCE_PARALLEL="${parallel[$method]:-1}" "$here/$method/record.sh" \
            "$checkout" || echo "$method $dataset: the recording stopped ($?)" >&2
    fi
    python "$here/$method/replay.py" "$checkout" --dataset "$dataset" || echo "$method $dataset: replay failed" >&2
}
for i in "${!streams[@]}"; do
    stream="${streams[$i]}" method="${streams[$i]%%:*}"
    (for dataset in ${stream#*:}; do
         record_and_replay "$method" "$dataset" $((port + 100 + i)) > "/tmp/conformance-$method-$dataset.log" 2>&1
     done) & pids+=($!)
done
wait "${pids[@]}"
kill "$server"; wait "$server" 2>/dev/null
python "$here/table.py" --readme
