# Sourced by each method's record.sh: the embedded model server (unless RECORD_UPSTREAM named one: $upstream) and
# the recorder in front of it, logging every call into $log, on port $port; both write their logs into $out and stop
# when the script ends. Afterwards $upstream is the model endpoint the recorder forwards to.
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT

wait_for() {  # URL PID LOG: until URL answers; the process ending first is an error, shown with its log
    until curl -sf "$1" > /dev/null; do
        kill -0 "$2" 2>/dev/null || { cat "$3" >&2; exit 1; }
        sleep 1
    done
}

# 16,384 tokens a request: the released RethinkMCTS cuts a chat to 8,000 tiktoken tokens, which the embedded model's
# tokenizer can count as more than 8,192 (gpt-4o-mini, which it was written for, takes 128k). A reply the request
# sets no max_tokens for ends at 3,072 new tokens (see queue.sh).
if [ -z "$upstream" ]; then
    # another server there would be taken for this one, and its model for the embedded 1.5B
    if curl -sf http://127.0.0.1:8080/v1/models > /dev/null; then
        echo "port 8080 is in use: stop what serves there, or give its /v1 URL as RECORD_UPSTREAM" >&2; exit 2
    fi
    engine='{"n_predict": 3072}'
    CODEFOREST_LLAMA_SETTINGS="${CODEFOREST_LLAMA_SETTINGS:-$engine}" \
        codeforest serve --model local --port 8080 --n-ctx 16384 > "$out/serve.log" 2>&1 & pids+=($!)
    upstream=http://127.0.0.1:8080/v1
    wait_for "$upstream/models" "${pids[-1]}" "$out/serve.log"
fi
# The released run's Python processes hash strings with seed 0, as codeforest's sandbox runs programs: a set of
# strings a program or a trace prints then reads in one order, where each process drew a random seed of its own.
export PYTHONHASHSEED=0

# Something else answering on the port (another recording's recorder) would take this run's calls into its log.
if curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null; then echo "port $port is in use: set RECORD_PORT" >&2; exit 2; fi
codeforest recorder --log "$log" --upstream "$upstream" --port "$port" > "$out/recorder.log" 2>&1 & pids+=($!)
wait_for "http://127.0.0.1:$port/v1/models" "${pids[-1]}" "$out/recorder.log"
