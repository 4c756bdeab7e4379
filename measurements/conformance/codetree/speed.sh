#!/usr/bin/env bash
# The wall time of the released CodeTree and of codeforest's codetree graph on the same recorded replies, each
# reply after a fixed delay (DELAY seconds, default 1), so that model time is the same for both and the rest
# (program runs, the search's own work, what runs in parallel) shows. Usage:
#   measurements/conformance/codetree/speed.sh /path/to/CodeTree-checkout [humaneval|apps]
# Run record.sh first (its call log and the released code's environment are reused). Prints both times and writes
# them to DATASET.speed.json beside this script (codeforest's per-problem times to DATASET.speed.jsonl).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
checkout="$(cd "${1:?the path of a CodeTree checkout}" && pwd)"
dataset="${2:-humaneval}"
delay="${DELAY:-1}"
venv="${CONFORMANCE_VENV:-$HOME/.cache/codeforest/conformance/codetree-venv}"
out="${CONFORMANCE_OUT:-/tmp/codetree-run-$dataset}"
case "$dataset" in humaneval) subset=humaneval.jsonl; mode=(--function) ;; apps) subset=apps.json; mode=() ;;
    *) echo "the dataset is humaneval or apps" >&2; exit 2 ;; esac
[ -f "$out/$subset" ] || { echo "run record.sh $checkout $dataset first" >&2; exit 1; }
ids="$(python3 -c "import json, sys
text = open(sys.argv[1]).read()
rows = json.loads(text) if sys.argv[1].endswith('.json') else [json.loads(line) for line in text.splitlines()]
print(','.join(r.get('task_id') or 'APPS/' + r['name'] for r in rows))" "$out/$subset")"
plus="$(ls "${CODEFOREST_CACHE:-$HOME/.cache/codeforest}"/data/HumanEvalPlus-*.jsonl.gz 2>/dev/null | head -1)"

codeforest recorder --log "$here/$dataset.calls.jsonl" --misses "$out/speed.misses.jsonl" --delay "$delay" \
    --port 8094 > "$out/speed-recorder.log" 2>&1 & rec=$!
trap 'kill $rec 2>/dev/null; wait' EXIT
until curl -sf http://127.0.0.1:8094/v1/models > /dev/null; do sleep 1; done
started=$(date +%s.%N)
(cd "$checkout" && CONFORMANCE_FINALS=/dev/null PATH="$venv/bin:$PATH" CONFORMANCE_IDS="$ids" CONFORMANCE_PLUS="$plus" PYTHONPATH="$here/shims" \
    OPENAI_BASE_URL=http://127.0.0.1:8094/v1 OPENAI_API_KEY=replayed "$venv/bin/python" "$here/shims/run_released.py" \
    main.py --run_name "speed-$dataset" --root_dir "$out/speed-root" --dataset_path "$out/$subset" --strategy agent \
    --language py --model gpt-4o-mini --pass_at_k 1 --max_iters 20 "${mode[@]}" > "$out/speed-released.log" 2>&1)
released=$(python3 -c "print(round($(date +%s.%N) - $started, 2))")
started=$(date +%s.%N)
python "$here/replay.py" "$checkout" --dataset "$dataset" --ids "$ids" --delay "$delay" --out-suffix speed > /dev/null
codeforest_s=$(python3 -c "print(round($(date +%s.%N) - $started, 2))")
echo "released CodeTree: ${released} s; codeforest codetree: ${codeforest_s} s (every reply after ${delay} s)"
printf '{"released_s": %s, "codeforest_s": %s, "delay_s": %s, "problems": "%s"}\n' "$released" "$codeforest_s" \
    "$delay" "$ids" > "$here/$dataset.speed.json"
