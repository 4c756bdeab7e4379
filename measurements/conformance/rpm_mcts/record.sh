#!/usr/bin/env bash
# Record the released RPM-MCTS (codellm12842/RPM-MCTS @ 9189885) on apps_introductory150 problems (or, with
# CONFORMANCE_DATASET=humaneval, humaneval164 ones) through `codeforest recorder`, with the embedded model codeforest
# uses. Usage:
#   measurements/conformance/rpm_mcts/record.sh /path/to/RPM-MCTS-checkout [APPS/4382,APPS/4343,...]
# Needs codeforest installed with the [local] extra (`codeforest` on PATH). The released code's own environment goes
# to $CONFORMANCE_VENV (default ~/.cache/codeforest/conformance/rpm-mcts-venv); its run folder to $CONFORMANCE_OUT
# (default /tmp/rpm-mcts-run-DATASET). Rerunning resumes: the recorder answers what its log already holds, and every run
# goes through all the problems again. The released code runs the programs it generates in its own process, as it
# was written to: run this in a throwaway machine or container.
#
# For plumbing checks without the model: RECORD_UPSTREAM=URL (an OpenAI-compatible /v1 base) is used instead of
# starting `codeforest serve`; RECORD_PORT (default 8090) is the recorder's port; RECORD_LOG and RECORD_FINALS
# (default: DATASET.calls.jsonl and DATASET.finals.jsonl beside this script, DATASET apps or humaneval) are where the
# calls and the final programs go.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
checkout="$(cd "${1:?the path of an RPM-MCTS checkout}" && pwd)"
dataset="${CONFORMANCE_DATASET:-apps}"
# The first 5 of the dev sample: select_tasks(load_dataset(NAME), sample=20, seed=5)[:5]. The released run_all.py
# names a dataset for its log folder only (its rows come from the shimmed get_dataset_path).
case "$dataset" in
    apps) name=apps_introductory150; released_name=apps_introductory150
          default_ids="APPS/4382,APPS/4343,APPS/4073,APPS/4688,APPS/4021" ;;
    humaneval) name=humaneval164; released_name=human-eval-plus
               default_ids="HumanEval/159,HumanEval/65,HumanEval/91,HumanEval/135,HumanEval/7" ;;
    *) echo "CONFORMANCE_DATASET is apps or humaneval, not $dataset" >&2; exit 2 ;;
esac
ids="${2:-$default_ids}"
venv="${CONFORMANCE_VENV:-$HOME/.cache/codeforest/conformance/rpm-mcts-venv}"
out="${CONFORMANCE_OUT:-/tmp/rpm-mcts-run-$dataset}"
port="${RECORD_PORT:-8090}"
log="${RECORD_LOG:-$here/$dataset.calls.jsonl}"
finals="${RECORD_FINALS:-$here/$dataset.finals.jsonl}"  # each problem's final program and tree, from the released output
upstream="${RECORD_UPSTREAM:-}"
command -v codeforest > /dev/null || { echo "codeforest is not on PATH: activate its environment" >&2; exit 2; }
cf_python="$(sed -n '1s/^#!//p' "$(command -v codeforest)")"  # the interpreter codeforest runs with

# What the released search imports, and no more (its pyproject also lists torch's stack, datasets, cilog...):
# openai's 1.x client (ChatAPI), backoff and python-dotenv (chat_models_api), numpy (the similarity filter, and the
# generated programs' import header), astunparse (the executor), astroid, astor, graphviz and jsonlines (imported by
# the LDB debugger module, which mcts.py imports; the debugger is off), langchain 0.3 with langchain-community (its
# JSONLoader needs jq) and langchain-chroma (the knowledge base: `langchain.storage` and `langchain.embeddings`, which
# the released knowledge_base/*.py import, left langchain in 1.0), tqdm (the KB build), and wordllama for the
# embeddings shim. sentence-transformers, transformers and torch are not installed: langchain_huggingface is shimmed.
mkdir -p "$(dirname "$venv")"
# queue.sh records both datasets side by side: one sets up the environment and the checkout's KB at a time
exec 9> "$venv.lock"; flock 9
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q "openai>=1.40" "backoff>=2.2" \
    "python-dotenv>=1.0" "numpy>=1.26" "astunparse>=1.6" "astroid>=3.0" "astor>=0.8" "graphviz>=0.20" \
    "jsonlines>=4.0" "tqdm>=4.66" "jq>=1.6" "langchain>=0.3,<1" "langchain-community>=0.3" "langchain-chroma>=0.2.4" \
    "wordllama>=0.4"; }

mkdir -p "$out"
# The run's problems, as the released code reads them, in the sample's order: rows of its own apps_introductory150
# file (byte for byte the file codeforest loads); for HumanEval, whose released file (HumanEval+) is not in the
# repository's snapshot, rows of codeforest's humaneval164 in that same format (task_id, prompt, entry_point,
# given_tests: the search's tests, and test: a check program, which the released rows end with its call).
if [ "$dataset" = apps ]; then source_file="$checkout/dataset/apps_v2/apps_test_introductory150.jsonl"; else
    source_file="$("$cf_python" "$here/../data_file.py" "$name")"
    [ -f "$source_file" ] || { echo "$name is not on this machine: codeforest data fetch $name" >&2; exit 2; }
fi
python3 - "$source_file" "$ids" "$out/problems.jsonl" <<'PY'
import json, sys
source, ids, target = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
rows = {row["task_id"]: row for row in map(json.loads, open(source, encoding="utf-8"))}
missing = [i for i in ids if i not in rows]
assert not missing, f"not in {source}: {missing}"
for i in ids:  # HumanEval's check program ends without its call
    if not rows[i]["test"].rstrip().endswith(f"check({rows[i]['entry_point']})"):
        rows[i]["test"] = rows[i]["test"].rstrip() + f"\n\ncheck({rows[i]['entry_point']})\n"
with open(target, "w", encoding="utf-8") as f:
    f.writelines(json.dumps(rows[i], ensure_ascii=False) + "\n" for i in ids)
PY

# The knowledge base. The released search opens output/knowledge_base/kb_2_v3/chroma_db, which the repository does
# not ship, nor the steps it is built from (output/canonical_steps/processed_canonical_steps_with_topic.jsonl, the
# output of knowledge_base/1_get_steps_from_canonical.py and 2_add_category.py on the authors' unshipped input.jsonl
# of 11,038 APPS and CodeContests training problems). The steps here are codeforest's packaged ones (the default
# KB of codeforest's rpm_mcts: 306 problems of mbpp500, apps_interview150 and codecontests150, none of
# apps_introductory150), written in the released steps file's shape; the prompt without its trailing whitespace, as
# codeforest stores it, so both knowledge bases hold the same documents. The KB is then built by the released
# builder, unchanged, at its defaults (README step 3: python rpm_mcts_tools/knowledge_base/vector_db_build_kb2.py).
codeforest_pkgs="$("$cf_python" -c 'import json, os, codeforest, codeforest.tools
print(json.dumps({"codeforest": os.path.dirname(codeforest.__file__),
                  "codeforest.tools": os.path.dirname(codeforest.tools.__file__)}))')"
packaged="$("$cf_python" -c 'from codeforest.tools.knowledge import PACKAGED_STEPS; print(PACKAGED_STEPS)')"
steps="$checkout/output/canonical_steps/processed_canonical_steps_with_topic.jsonl"
kb="$checkout/output/knowledge_base/kb_2_v3"
mkdir -p "$(dirname "$steps")"
python3 - "$packaged" "$steps.new" <<'PY'
import json, sys
source, target = sys.argv[1], sys.argv[2]
with open(source, encoding="utf-8") as f, open(target, "w", encoding="utf-8") as out:
    for record in map(json.loads, filter(str.strip, f)):
        if record["steps"]:  # codeforest stores no document for a problem without steps either
            out.write(json.dumps({"task_id": record["id"], "source": record["source"], "topic": record["topic"],
                                  "prompt": record["prompt"].rstrip(), "canonical_steps": record["steps"]},
                                 ensure_ascii=False) + "\n")
PY
if [ -d "$kb/chroma_db" ] && cmp -s "$steps.new" "$steps"; then rm "$steps.new"; else
    mv "$steps.new" "$steps" && rm -rf "$kb"
    (cd "$checkout" && ANONYMIZED_TELEMETRY=False CONFORMANCE_CODEFOREST="$codeforest_pkgs" \
        PYTHONPATH="$here/shims:$checkout" "$venv/bin/python" rpm_mcts_tools/knowledge_base/vector_db_build_kb2.py) \
        > "$out/kb_build.log" 2>&1 || { cat "$out/kb_build.log"; exit 1; }
fi
flock -u 9

source "$here/../record_common.sh"  # the model server and the recorder

cd "$checkout"
# The released run_mcts resumes by skipping the problems its output file holds; that would also shift the one
# random.seed(42) stream its tie-breaks draw from, so every run starts that file afresh.
rm -f "$out/code.jsonl" "$out/eval.jsonl"
# run_all.py at its defaults (5 rollouts, kb_coef 0.5, one worker), with the one model name it accepts (a string to
# the recorder) and the intermediate logs on (logging only: output/logger/rpm-mcts/... in the checkout).
ANONYMIZED_TELEMETRY=False CONFORMANCE_BASE_URL="http://127.0.0.1:$port/v1" \
    CONFORMANCE_DATASET="$out/problems.jsonl" CONFORMANCE_CODEFOREST="$codeforest_pkgs" \
    PYTHONPATH="$here/shims:$checkout" \
    "$venv/bin/python" -u "$here/shims/run_released.py" baselines/run_all.py --base_model Qwen2.5-7B-Instruct \
    --method rpm-mcts --dataset "$released_name" --output_code_path "$out/code.jsonl" \
    --eval_result_path "$out/eval.jsonl" --save_intermediate true 2>&1 | tee "$out/released.log"

# The final program of each problem (the one the released code scores), with its MCTS steps and the tree's paths.
python3 - "$out/code.jsonl" "$ids" "$finals" <<'PY'
import json, sys
source, ids, target = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
rows = {row["task_id"]: row for row in map(json.loads, open(source, encoding="utf-8"))}
keep = ("task_id", "entry_point", "finish", "solution", "mcts_steps", "paths", "token_usage")
with open(target, "w", encoding="utf-8") as f:
    f.writelines(json.dumps({k: rows[i][k] for k in keep if k in rows[i]}, ensure_ascii=False) + "\n"
                 for i in ids if i in rows)
print(f"{sum(i in rows for i in ids)} of {len(ids)} problems finished; final programs in {target}")
PY
