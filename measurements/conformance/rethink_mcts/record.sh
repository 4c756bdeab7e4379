#!/usr/bin/env bash
# Record the released RethinkMCTS (SIMONLQY/RethinkMCTS @ 3908cac) on HumanEval problems (or, with
# CONFORMANCE_DATASET=apps, apps_interview150 problems, functions with asserts read by its HumanEval handler as
# CodePRM's driver gives them) through `codeforest recorder`, with the embedded model codeforest uses. Usage:
#   measurements/conformance/rethink_mcts/record.sh /path/to/RethinkMCTS-checkout [HumanEval/159,HumanEval/65,...]
# Needs codeforest installed with the [local] extra (for `codeforest serve`), curl, and PyPI (for the released
# code's own environment, $CONFORMANCE_VENV, default ~/.cache/codeforest/conformance/rethink-mcts-venv). The run
# folder is $CONFORMANCE_OUT (default /tmp/rethink-mcts-run-DATASET). Rerunning resumes: the recorder answers what its log
# already holds, and a problem whose final program is logged is not run again. The released code runs the programs
# it generates in its own process, as it was written to: run this in a throwaway machine or container.
# Other settings, for a dry run of the plumbing: RECORD_UPSTREAM=URL (an OpenAI-compatible /v1 base already
# serving) records from it instead of starting `codeforest serve`; RECORD_PORT (default 8090) is the recorder's port;
# RECORD_LOG and RECORD_FINALS (default: DATASET.calls.jsonl and DATASET.finals.jsonl beside this script; also read as
# CONFORMANCE_LOG and CONFORMANCE_FINALS) are where the calls and the final programs go; HUMANEVAL_FILE is the
# HumanEval file with public tests (default: codeforest's humaneval164, `codeforest data fetch humaneval164`).
# Without ids: the first five problems of the dataset's dev sample (`--sample 20 --seed 5`). CONFORMANCE_PARALLEL=N
# (default 1) records N problems at once, each in a copy of the checkout of its own (the LDB debugger writes its
# trace files into the working folder under names drawn from a seeded random stream), all through the one recorder;
# leave it at 1 when timing the released run (speed.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
checkout="$(cd "${1:?the path of a RethinkMCTS checkout}" && pwd)"
dataset="${CONFORMANCE_DATASET:-humaneval}"
command -v codeforest > /dev/null || { echo "codeforest is not on PATH: activate its environment" >&2; exit 2; }
cf_python="$(sed -n '1s/^#!//p' "$(command -v codeforest)")"  # the interpreter codeforest runs with
case "$dataset" in
    humaneval) default_ids="HumanEval/159,HumanEval/65,HumanEval/91,HumanEval/135,HumanEval/7" name=humaneval164
               humaneval="${HUMANEVAL_FILE:-$("$cf_python" "$here/../data_file.py" humaneval164)}" ;;
    apps) default_ids="APPS/2115,APPS/826,APPS/1533,APPS/323,APPS/2085" name=apps_interview150
          humaneval="$("$cf_python" "$here/../data_file.py" apps_interview150)" ;;
    *) echo "CONFORMANCE_DATASET is humaneval or apps, not $dataset" >&2; exit 2 ;;
esac
ids="${2:-$default_ids}"  # the first 5 of the dev sample
parallel="${CONFORMANCE_PARALLEL:-1}"
[[ "$parallel" =~ ^[1-9][0-9]*$ ]] || { echo "CONFORMANCE_PARALLEL is a count of problems, not '$parallel'" >&2; exit 2; }
venv="${CONFORMANCE_VENV:-$HOME/.cache/codeforest/conformance/rethink-mcts-venv}"
out="${CONFORMANCE_OUT:-/tmp/rethink-mcts-run-$dataset}"
log="${RECORD_LOG:-${CONFORMANCE_LOG:-$here/$dataset.calls.jsonl}}"
finals="${RECORD_FINALS:-${CONFORMANCE_FINALS:-$here/$dataset.finals.jsonl}}"  # each problem's final program, its value, its paths
port="${RECORD_PORT:-8090}"
upstream="${RECORD_UPSTREAM:-}"
[ -f "$humaneval" ] || { echo "no $dataset file at '$humaneval' (HUMANEVAL_FILE; codeforest data fetch $name)" >&2
                        exit 2; }
# The released code finds its own files by cutting its path at the first "RethinkMCTS" (utils.get_proj_path): the
# run folder is $out/RethinkMCTS, and $out must not hold that name itself.
case "$out" in *RethinkMCTS*) echo "CONFORMANCE_OUT must not contain 'RethinkMCTS'" >&2; exit 2;; esac

# Only what the released search imports and uses. torch, torcheval, torchmetrics, transformers, accelerate, sklearn,
# matplotlib and pyext are shimmed (shims/): they are imported at module level and unused on this path, or (torch)
# only hold token ids in lists. tiktoken's cl100k_base file, which tiktoken downloads on first use from a host outside
# PyPI (unreachable offline), is taken from the LiteLLM wheel on PyPI, which ships that very file; tiktoken checks its hash.
# astroid stays below 4, whose AstroidBuilder needs a manager argument the released LDB debugger does not pass.
mkdir -p "$(dirname "$venv")"
exec 9> "$venv.lock"; flock 9  # queue.sh records a method's datasets side by side: one sets the environment up at a time
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "openai>=1.40" "tiktoken>=0.7" "numpy>=1.26" "jsonlines>=4.0" "astunparse>=1.6.3" \
    "astroid>=3.0,<4" "astor>=0.8.1" "tqdm>=4.66"
source "$here/../tiktoken_offline.sh"
tiktoken_offline "$venv"
flock -u 9

# A fresh copy of the checkout each run, so every problem not yet whole is solved again (the released code skips a
# problem whose result file exists; the recorder answers the calls it has), with the problems in the released
# format: its processed.jsonl rows carry prompt, entry_point, given_tests (public) and test (private, ending in a call of
# check), which here come from the papers' HumanEval file.
run="$out/RethinkMCTS"
mkdir -p "$out"
rm -rf "$run"
cp -r "$checkout" "$run"
rm -rf "$run/results"
python3 - "$humaneval" "$run/dataProcess/humaneval/processed.jsonl" <<'PY'
import json, sys
source, target = sys.argv[1:]
with open(target, "w") as f:
    for row in map(json.loads, open(source)):
        if not row["test"].rstrip().endswith(f"check({row['entry_point']})"):  # HumanEval's: the call added
            row["test"] = row["test"].rstrip() + f"\n\ncheck({row['entry_point']})\n"
        keep = ("task_id", "prompt", "entry_point", "given_tests", "test", "canonical_solution")
        f.write(json.dumps({k: row[k] for k in keep if k in row}) + "\n")
PY

source "$here/../record_common.sh"  # the model server and the recorder

# Each problem in its own process, as run.py does with --index (its default is all 164 in one process; no search
# state is carried from one problem to the next there either). Every search setting is run.py's default. A problem
# whose final program is logged is whole and is not run again (a rerun would only spend its test runs).
mkdir -p "$out/logs"
touch "$finals"
rm -f "$out/failed"
record_problem() {  # ID FOLDER: run the released search on one problem in FOLDER, then log its final program
    local id="$1" n="${1#*/}" folder="$2"
    (cd "$folder" && PATH="$venv/bin:$PATH" OPENAI_BASE_URL="http://127.0.0.1:$port/v1" OPENAI_API_KEY=recorded \
        "$venv/bin/python" "$here/shims/run_released.py" run.py --index "$n") 2>&1 | tee "$out/logs/$n.log" \
        | if [ "$parallel" = 1 ]; then cat; else cat > /dev/null; fi || echo "$id" >> "$out/failed"
    # the final program (the released argmax of train rewards) and the path each rollout selected (chance-node
    # positions from the root), as the released run prints it
    python3 - "$folder/results/humaneval/Experiment_0/$n.json" "$id" "$out/logs/$n.log" "$finals" <<'PY' \
        || echo "$id" >> "$out/failed"
import json, os, re, sys
path, task_id, output, target = sys.argv[1:]
if not os.path.exists(path):
    sys.exit(f"{task_id}: no result")
result = json.load(open(path))
best = max(range(len(result["train rewards"])), key=result["train rewards"].__getitem__)  # its argmax
selections = re.findall(r"^selection_\d+: \n(root.*)$", open(output, errors="replace").read(), flags=re.M)
with open(target, "a") as f:
    f.write(json.dumps({"task_id": task_id, "program": result["codes"], "train_reward": result["train rewards"][best],
                        "test_reward": result["rewards"][best], "programs": len(result["rewards"]),
                        "selections": selections}) + "\n")
print(f"{task_id}: final program logged")
PY
}
# Problems recorded at once run as background jobs, each in a process group of its own (job control), so that a
# stop ends each one's released run with it.
running=()
[ "$parallel" = 1 ] || set -m
trap 'for pid in "${running[@]}"; do kill -- -"$pid" 2>/dev/null; done; kill "${pids[@]}" 2>/dev/null; wait' EXIT
for id in ${ids//,/ }; do
    if grep -q "\"task_id\": \"$id\"" "$finals"; then echo "$id: recorded whole (its final program is logged)"; continue; fi
    if [ "$parallel" = 1 ]; then record_problem "$id" "$run"; continue; fi
    folder="$out/problem-${id#*/}/RethinkMCTS"  # a copy of its own, made from the run folder with its problems file
    rm -rf "$folder" && mkdir -p "$(dirname "$folder")" && cp -r "$run" "$folder"
    while [ "${#running[@]}" -ge "$parallel" ]; do  # a slot for it: the first of those running to end
        finished=""
        wait -n -p finished "${running[@]}" || true
        alive=()
        for pid in "${running[@]}"; do [ "$pid" = "$finished" ] || alive+=("$pid"); done
        running=("${alive[@]}")
    done
    echo "$id: recording (log: $out/logs/${id#*/}.log)"
    record_problem "$id" "$folder" & running+=($!)
done
for pid in "${running[@]}"; do wait "$pid" || true; done
running=()
# the released output of every problem, in the order of the ids
for id in ${ids//,/ }; do cat "$out/logs/${id#*/}.log" 2>/dev/null; done > "$out/released.log"
[ ! -s "$out/failed" ] || { echo "the released code failed on: $(sort -u "$out/failed" | paste -sd' ')" >&2; exit 1; }
