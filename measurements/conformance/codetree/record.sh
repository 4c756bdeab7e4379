#!/usr/bin/env bash
# Record the released CodeTree (SalesforceAIResearch/CodeTree @ 72c9c87) on HumanEval problems through
# `codeforest recorder`, with the embedded model codeforest uses. Usage:
#   measurements/conformance/codetree/record.sh /path/to/CodeTree-checkout [HumanEval/159,HumanEval/65,...]
# Needs codeforest installed with the [local] extra and the HumanEval+ release fetched
# (`codeforest data fetch humaneval_plus`). The released code's own environment goes to $CONFORMANCE_VENV
# (default ~/.cache/codeforest/conformance/codetree-venv); its run folder to $CONFORMANCE_OUT (default
# /tmp/codetree-run). Rerunning resumes: the recorder answers what its log already holds. The released code
# runs the programs it generates in its own process, as it was written to: run this in a throwaway machine or
# container.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
checkout="$(cd "${1:?the path of a CodeTree checkout}" && pwd)"
ids="${2:-HumanEval/159,HumanEval/65,HumanEval/91,HumanEval/135,HumanEval/7}"  # the first 5 of the dev sample
venv="${CONFORMANCE_VENV:-$HOME/.cache/codeforest/conformance/codetree-venv}"
out="${CONFORMANCE_OUT:-/tmp/codetree-run}"
log="$here/humaneval.calls.jsonl"
plus="$(ls "${CODEFOREST_CACHE:-$HOME/.cache/codeforest}"/data/HumanEvalPlus-*.jsonl.gz | head -1)"

# The released requirements pin openai==0.28, whose module has no OpenAI class, which the code calls; the 1.x
# client is what it runs with. vllm, transformers and datasets are shimmed (shims/); torch is never imported.
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q "openai>=1.40" \
    "tenacity>=8.2" "astunparse>=1.6" "jsonlines>=2.0" "numpy>=1.26" "httpx>=0.27"; }

mkdir -p "$out"
python3 - "$checkout/data/humaneval.jsonl" "$ids" "$out/humaneval.jsonl" <<'PY'
import json, sys
source, ids, target = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
rows = {row["task_id"]: row for row in map(json.loads, open(source))}
with open(target, "w") as f:
    f.writelines(json.dumps(rows[i]) + "\n" for i in ids)
PY

codeforest serve --model local --port 8080 > "$out/serve.log" 2>&1 & serve=$!
codeforest recorder --log "$log" --upstream http://127.0.0.1:8080/v1 --port 8090 > "$out/recorder.log" 2>&1 & rec=$!
trap 'kill $rec $serve 2>/dev/null; wait' EXIT
until curl -sf http://127.0.0.1:8080/v1/models > /dev/null; do sleep 2; done

cd "$checkout"
CONFORMANCE_IDS="$ids" CONFORMANCE_PLUS="$plus" PYTHONPATH="$here/shims" OPENAI_BASE_URL=http://127.0.0.1:8090/v1 \
    OPENAI_API_KEY=recorded "$venv/bin/python" main.py --run_name conformance --root_dir "$out/root" \
    --dataset_path "$out/humaneval.jsonl" --strategy agent --language py --model gpt-4o-mini --pass_at_k 1 \
    --max_iters 20 --function --verbose 2>&1 | tee "$out/released.log"
