#!/usr/bin/env bash
# Record the released CodePRM (SIMONLQY/CodePRM @ 1f54aef): its GVR-MCTS search (`run.py -m CodePRMMCTS`) with the
# prompted LLM verifier, through `codeforest recorder`, with the embedded model codeforest uses. Usage:
#   measurements/conformance/codeprm/record.sh /path/to/CodePRM-checkout [APPS/2115,APPS/826,...]
# Without ids: the first five apps_interview150 problems of the dev sample (`--sample 20 --seed 5`); with
# CONFORMANCE_DATASET=humaneval, the first five HumanEval ones (humaneval164, its asserts as public tests). Needs codeforest
# installed with the [local] extra (`codeforest` on PATH), curl, and PyPI (for the released code's own environment,
# $CONFORMANCE_VENV, default ~/.cache/codeforest/conformance/codeprm-venv). The run folder is $CONFORMANCE_OUT
# (default /tmp/codeprm-run). Rerunning resumes: the recorder answers what its log already holds, and a run goes
# through the problems whose final program is not logged yet. The released code runs the programs it generates in
# its own (forked) processes, as it was written to: run this in a throwaway machine or container.
#
# For plumbing checks without the model: RECORD_UPSTREAM=URL (an OpenAI-compatible /v1 base) is used instead of
# starting `codeforest serve`; RECORD_PORT (default 8090) is the recorder's port; RECORD_LOG and RECORD_FINALS
# (default: DATASET.calls.jsonl and DATASET.finals.jsonl beside this script, DATASET apps or humaneval) are where
# the calls and the final programs go.
# CODEPRM_ROLLOUTS (default 16, the README's GVR command; run.py's own --rollout default is 4) sets the rollouts;
# CODEPRM_ARGS adds run.py flags (e.g. "--reward_mode pub_prm --verify_pos_mode llm_score_thresh", the paper's
# threshold verification and PRM reward with the LLM verifier; the defaults never call the verifier).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
checkout="$(cd "${1:?the path of a CodePRM checkout}" && pwd)"
[ -f "$checkout/models/CodePRMMCTS.py" ] || { echo "$checkout is not a CodePRM checkout" >&2; exit 2; }
cf_python="$(sed -n '1s/^#!//p' "$(command -v codeforest)")"  # the interpreter codeforest runs with
dataset="${CONFORMANCE_DATASET:-apps}"
# The first 5 of the dev sample: select_tasks(load_dataset(NAME), sample=20, seed=5)[:5]
case "$dataset" in
    apps) name=apps_interview150; default_ids="APPS/2115,APPS/826,APPS/1533,APPS/323,APPS/2085" ;;
    humaneval) name=humaneval164; default_ids="HumanEval/159,HumanEval/65,HumanEval/91,HumanEval/135,HumanEval/7" ;;
    *) echo "CONFORMANCE_DATASET is apps or humaneval, not $dataset" >&2; exit 2 ;;
esac
ids="${2:-$default_ids}"
venv="${CONFORMANCE_VENV:-$HOME/.cache/codeforest/conformance/codeprm-venv}"
out="${CONFORMANCE_OUT:-/tmp/codeprm-run-$dataset}"
log="${RECORD_LOG:-$here/$dataset.calls.jsonl}"
finals="${RECORD_FINALS:-$here/$dataset.finals.jsonl}"  # each problem's final program, read from the released result
port="${RECORD_PORT:-8090}"
upstream="${RECORD_UPSTREAM:-}"
rollouts="${CODEPRM_ROLLOUTS:-16}"
read -r -a extra <<< "${CODEPRM_ARGS:-}"
# The released code finds its own files by cutting its path at the first "CodePRM" (utils.get_proj_path): the run
# folder is $out/CodePRM, and $out must not hold that name itself.
case "$out" in *CodePRM*) echo "CONFORMANCE_OUT must not contain 'CodePRM'" >&2; exit 2;; esac

# Only what the released search imports and uses: the OpenAI 1.x client (ChatModels.GPT35), tiktoken (its token
# state), numpy, jsonlines (the HumanEval-format reader), astunparse (the executor) and tqdm. torch and the packages
# of local models, the trained PRM and plotting are shimmed (shims/). tiktoken's cl100k_base file, which tiktoken
# downloads on first use from a host outside PyPI (unreachable offline), is taken from the LiteLLM wheel on PyPI, which ships
# that very file; tiktoken checks its hash.
mkdir -p "$(dirname "$venv")"
exec 9> "$venv.lock"; flock 9  # queue.sh records a method's datasets side by side: one sets the environment up at a time
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "openai>=1.40" "tiktoken>=0.7" "numpy>=1.26" "jsonlines>=4.0" "astunparse>=1.6.3" \
    "tqdm>=4.66"
source "$here/../tiktoken_offline.sh"
tiktoken_offline "$venv"
flock -u 9

# A fresh copy of the checkout each run (without its git folder and the trained PRM adapters, which this run does not
# load), holding the problems in the format the released code reads for function problems: its HumanEval handler
# (`--dataset humaneval`) reads dataProcess/humaneval/processed.jsonl rows with task_id ("X/N", picked by
# `--index N`), prompt, entry_point, given_tests (public: the search's tests) and test (private, a check program
# ending in its call: only the released result's test reward). Those are the fields of codeforest's
# apps_interview150 file itself (RPM-MCTS's dataset/apps_v2/apps_test_interview150.jsonl), copied as they are, and
# of its humaneval164 file (whose check program gets its call added).
# (The released APPS handler reads the raw APPS folders, standard-input problems only: not these.)
run="$out/CodePRM"
mkdir -p "$out"
rm -rf "$run" "$out/results" "$out/logs"
mkdir -p "$run" "$out/logs"
tar -C "$checkout" --exclude=./.git --exclude=./dataProcess/ft_results --exclude=./results -cf - . | tar -C "$run" -xf -
source_file="$("$cf_python" "$here/../data_file.py" "$name")"
[ -f "$source_file" ] || { echo "$name is not on this machine: codeforest data fetch $name" >&2; exit 2; }
mkdir -p "$run/dataProcess/humaneval"
python3 - "$source_file" "$ids" "$run/dataProcess/humaneval/processed.jsonl" <<'PY'
import json, sys
source, ids, target = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
rows = {row["task_id"]: row for row in map(json.loads, open(source, encoding="utf-8"))}
missing = [i for i in ids if i not in rows]
assert not missing, f"not in {source}: {missing}"
numbers = [i.split("/")[1] for i in ids]
assert len(set(numbers)) == len(numbers), "the released reader picks a problem by the number after '/'"
keep = ("task_id", "prompt", "entry_point", "given_tests", "test")
for i in ids:  # HumanEval's check program ends without its call
    if not rows[i]["test"].rstrip().endswith(f"check({rows[i]['entry_point']})"):
        rows[i]["test"] = rows[i]["test"].rstrip() + f"\n\ncheck({rows[i]['entry_point']})\n"
with open(target, "w", encoding="utf-8") as f:
    f.writelines(json.dumps({k: rows[i][k] for k in keep}, ensure_ascii=False) + "\n" for i in ids)
PY

source "$here/../record_common.sh"  # the model server and the recorder

# The README's GVR-MCTS command (`python run.py --dataset apps -m CodePRMMCTS -eid 2 --rollout 16`) with every other
# setting at run.py's defaults, on these function problems (`--dataset humaneval`), one process per problem
# (`--index N`; its default is all 164 HumanEval problems in one process, which carries no search state from one
# problem to the next either). `--prm_model_name gpt4o-mini`: the verifier is the generator's chat model (the
# prompted `llm_score_thought`); the default names the trained CodePRM adapter, which run.py would load onto CUDA at
# start (LocalModelActor) although these settings never consult it (`--reward_mode pub_test`,
# `--verify_pos_mode llm`). `--save`: each problem's result folder (run.py empties it at start: -eid 2 reruns).
# Standard input is /dev/null: the released executor runs the generated programs in forked children of this process,
# and a program reading input() would otherwise wait on the terminal until the released 10 s join kills it.
# A problem whose final program is logged is whole and is not run again (a rerun would only spend its test runs).
cd "$run"
: > "$out/released.log"
touch "$finals"
failed=()
for id in ${ids//,/ }; do
    n="${id#*/}"
    if grep -q "\"task_id\": \"$id\"" "$finals"; then echo "$id: recorded whole (its final program is logged)"; continue; fi
    OPENAI_BASE_URL="http://127.0.0.1:$port/v1" "$venv/bin/python" -u "$here/shims/run_released.py" run.py \
        --dataset humaneval -m CodePRMMCTS -eid 2 --rollout "$rollouts" --prm_model_name gpt4o-mini \
        --index "$n" --save "$out/results/$n" "${extra[@]}" < /dev/null 2>&1 | tee "$out/logs/$n.log" \
        >> "$out/released.log" || failed+=("$id")
    # The final program (the one the released code scores: the first of the highest train reward, np.argmax), read
    # from its result file; the selections (its own log lines "selection_i: root->0->2") from its output.
    python3 - "$out/results/$n" "$id" "$out/logs/$n.log" "$finals" <<'PY' || failed+=("$id")
import glob, json, re, sys
folder, task_id, log, target = sys.argv[1:]
found = glob.glob(f"{folder}/humaneval/Experiment_2/*/*/{task_id.split('/')[1]}.json")
if not found:
    sys.exit(f"{task_id}: no result in {folder}")
result = json.load(open(found[0]))
reply = result["codes"]  # the whole reply the program came in, as the released code keeps it
program = reply.split("```python")[1].split("```")[0] if "```python" in reply else reply  # what its executor runs
rewards = result["train rewards"]
best = max(range(len(rewards)), key=rewards.__getitem__)
selections = re.findall(r"^selection_(\d+): \n(root\S*)", open(log, encoding="utf-8").read(), re.M)
with open(target, "a", encoding="utf-8") as f:
    f.write(json.dumps({"task_id": task_id, "program": program, "reply": reply, "train_reward": rewards[best],
                        "test_reward": result["rewards"][best], "train_rewards": rewards,
                        "selections": [path for _, path in selections]}, ensure_ascii=False) + "\n")
print(f"{task_id}: final program logged (train reward {rewards[best]}, {len(rewards)} programs)")
PY
done
[ ${#failed[@]} -eq 0 ] || { echo "the released code failed on: ${failed[*]}" >&2; exit 1; }
