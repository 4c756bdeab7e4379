#!/usr/bin/env bash
# Record the released CodeTree (SalesforceAIResearch/CodeTree @ 72c9c87) through `codeforest recorder`, with the
# embedded model codeforest uses. Usage:
#   measurements/conformance/codetree/record.sh /path/to/CodeTree-checkout [humaneval|apps] [ID,ID,...]
# humaneval (the default): HumanEval problems, its `--function` mode; apps: problems of its own APPS file
# (data/apps_selected.json, codeforest's apps_stdio150), standard input and output. Without ids: the first five of
# the `--sample 20 --seed 5` dev sample (select_tasks(load_dataset(NAME), sample=20, seed=5)[:5], NAME humaneval164 or
# apps_stdio150). Run one dataset at a time in a checkout: the released executor writes every program it tests to the
# same file (temp_files/temp_test4715.py). Needs codeforest installed with the [local] extra and, for humaneval, the
# HumanEval+ release fetched (`codeforest data fetch humaneval_plus`). The released code's own environment goes to
# $CONFORMANCE_VENV (default ~/.cache/codeforest/conformance/codetree-venv); its run folder to $CONFORMANCE_OUT
# (default /tmp/codetree-run-DATASET). Rerunning resumes: the recorder answers what its log already holds. The
# released code runs the programs it generates in its own process, as it was written to: run this in a throwaway
# machine or container.
#
# For plumbing checks without the model: RECORD_UPSTREAM=URL (an OpenAI-compatible /v1 base) is used instead of
# starting `codeforest serve`; RECORD_PORT (default 8090) is the recorder's port; RECORD_LOG and RECORD_FINALS
# (default: DATASET.calls.jsonl and DATASET.finals.jsonl beside this script) are where the calls and programs go.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
checkout="$(cd "${1:?the path of a CodeTree checkout}" && pwd)"
dataset="${2:-humaneval}"
case "$dataset" in
    humaneval) source_file="$checkout/data/humaneval.jsonl"; subset=humaneval.jsonl; mode=(--function)
               default_ids="HumanEval/159,HumanEval/65,HumanEval/91,HumanEval/135,HumanEval/7" ;;
    apps) source_file="$checkout/data/apps_selected.json"; subset=apps.json; mode=()
          default_ids="APPS/3874,APPS/3136,APPS/2846,APPS/4014,APPS/84" ;;
    *) echo "the dataset is humaneval or apps, not $dataset" >&2; exit 2 ;;
esac
ids="${3:-$default_ids}"
venv="${CONFORMANCE_VENV:-$HOME/.cache/codeforest/conformance/codetree-venv}"
out="${CONFORMANCE_OUT:-/tmp/codetree-run-$dataset}"
log="${RECORD_LOG:-$here/$dataset.calls.jsonl}"
finals="${RECORD_FINALS:-$here/$dataset.finals.jsonl}"  # the program each problem ends with, logged outside the search
port="${RECORD_PORT:-8090}"
upstream="${RECORD_UPSTREAM:-}"
# (none is found for apps, which does not need it: no error then)
plus="$(ls "${CODEFOREST_CACHE:-$HOME/.cache/codeforest}"/data/HumanEvalPlus-*.jsonl.gz 2>/dev/null | head -1 || true)"
# Checked before anything is written: a run that cannot load its problems would leave the finals file empty.
[ "$dataset" != humaneval ] || [ -n "$plus" ] || { echo "humaneval needs the HumanEval+ release: codeforest data fetch humaneval_plus" >&2
                                                   exit 2; }

# The released requirements pin openai==0.28, whose module has no OpenAI class, which the code calls; the 1.x
# client is what it runs with. vllm, transformers and datasets are shimmed (shims/); torch is never imported.
mkdir -p "$(dirname "$venv")"
exec 9> "$venv.lock"; flock 9  # two recordings started at once: one sets the environment up at a time
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q "openai>=1.40" \
    "tenacity>=8.2" "astunparse>=1.6" "jsonlines>=2.0" "numpy>=1.26" "httpx>=0.27"; }
flock -u 9

mkdir -p "$out"
python3 - "$source_file" "$ids" "$out/$subset" <<'PY'
import json, sys
source, ids, target = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
if source.endswith(".jsonl"):
    rows = {row["task_id"]: row for row in map(json.loads, open(source))}
    with open(target, "w") as f:
        f.writelines(json.dumps(rows[i]) + "\n" for i in ids)
else:  # the APPS file: a JSON list, each problem named by its APPS number
    rows = {f"APPS/{row['name']}": row for row in json.load(open(source))}
    json.dump([rows[i] for i in ids], open(target, "w"))
PY

source "$here/../record_common.sh"  # the model server and the recorder

cd "$checkout"
mkdir -p temp_files  # the released executor writes each test program here and never creates the folder
: > "$finals"  # every run goes through all the problems again (the recorder answers what it has)
CONFORMANCE_FINALS="$finals" PATH="$venv/bin:$PATH" CONFORMANCE_IDS="$ids" CONFORMANCE_PLUS="$plus" \
    PYTHONPATH="$here/shims" OPENAI_BASE_URL="http://127.0.0.1:$port/v1" OPENAI_API_KEY=recorded \
    "$venv/bin/python" "$here/shims/run_released.py" main.py --run_name "conformance-$dataset" \
    --root_dir "$out/root" --dataset_path "$out/$subset" --strategy agent --language py --model gpt-4o-mini \
    --pass_at_k 1 --max_iters 20 "${mode[@]}" --verbose 2>&1 | tee "$out/released.log"
