#!/usr/bin/env bash
# The measurement queue of issues 17, 21, 15 and 16 (finished), in the order it ran: the issue needing the least
# model time left went first. Every step is a resumable `codeforest bench` (a rerun skips finished problems). Model
# runs go one after another: two servers at once on 2 cores are slower than in turn. Inside a step, 4 problems run at
# once on one server with 4 slots: batched decoding gave 1.8x the tokens per second of one stream here (27.9 against
# 15.2 with 4 streams; 26.7 with 8), and every call keeps its 8192-token context. QUEUE_CONCURRENCY=N sets another
# number (not CODEFOREST_...: that prefix is codeforest's own). Rerun as a whole, it measures again every row whose
# settings are no longer its graph's defaults; the measurements still open are in pending.sh.
HE="measurements/humaneval-fair-1.5b"
AI="measurements/apps-intro-1.5b"
# --request-timeout 7200: a rethink_mcts reply that runs to its 4096-token limit beside three other long calls
# decodes at about 1.5 tokens/s, over 30 minutes (at 1800 s APPS/2085 timed out on all 3 attempts; at the default
# 600 s HumanEval/26 did). --retry-errors reruns such a problem on the next pass.
# A 2 GiB host prompt cache (the default 256 MiB holds about 9,000 tokens of the 1.5B model's KV, some 4 prompts):
# with 4 problems at once, a call's best earlier prompt (its problem, its role) was long evicted. Replaying the
# rethink_mcts calls of apps-interview-1.5b in order, a 75,000-token cache would have served 43% of prompt
# characters from earlier prompts, against 18% for 256 MiB, and prompt reading is most of a call's time here.
# Measured live: 20% of prompt tokens came from the cache (51 calls), the pace did not measurably change (0.48 calls
# a minute against about 0.5), and the process grew from 2.3 to 4.6 GB.
# One KV cache per slot (`kv_unified: false`; each slot holds 8,192 tokens, what a request is meant to have, and
# none of the 2,420 calls cached in apps-interview-1.5b went over 7,000). On the unified cache each slot's attention
# ran over every slot's cells (llama.cpp PR 14363: "cross-sequence attention which we then simply discard"): with
# four long rethink_mcts calls the slots decoded 0.8-1.5 tokens/s each, against about 7 at short contexts. Only the
# engine changes: prompts, output limits and cached answers are the same. Seen live: 2 to 4 new rethink_mcts calls a
# minute, against 0.1 to 0.4 on the unified cache, but over other calls (more of them early in a search, with short
# prompts), so no controlled comparison: bench-model --slots 4 on four long calls put kv_split within noise
# (measurements/bench-model/slots4).
export CODEFOREST_LLAMA_SETTINGS='{"n_cache_reuse": 256, "cache_ram_mib": 2048, "kv_unified": false}'
bench() { echo "== $(date -u +%FT%TZ) $*"; codeforest bench --model local --cache --seed 5 --sample 20 \
    --concurrency "${QUEUE_CONCURRENCY:-4}" --request-timeout 7200 --retry-errors "$@"; }

# plain resampling given a graph's mean tokens per problem at its defaults (as many samples as fit): the comparison
# every search method must win
resample_at_tokens_of() {  # DATASET DIR GRAPH
    CODEFOREST_RESAMPLE_N=1000 bench --dataset "$1" --out "$2" --graph resample --tokens-of "$3"
}

# issue 17: every graph at its defaults after the corrections (HumanEval, the same 20 problems as humaneval-1.5b),
# then the token-budget sweep (largest first, the smaller replayed from the cache)
bench --dataset humaneval --out "$HE" --graph direct --graph resample --graph codetree --graph bester --graph rethink_mcts
bench --dataset humaneval --out "$HE" --graph direct --graph resample --graph bester --graph codetree \
    --token-budget 32000,8000,2000
# issue 17: resample at the mean tokens per problem of codetree and of rethink_mcts (as many samples as fit)
for graph in codetree rethink_mcts; do
    resample_at_tokens_of humaneval "$HE" "$graph"
done
# issue 21: resample with 8 samples: the first public-passing one (public), and all 8 drawn (min_candidates 8)
# for each other selector to choose from; codetree and bester under agreement, 4 candidates
CODEFOREST_RESAMPLE_N=8 bench --dataset humaneval --out "$HE" --graph resample
for selector in agreement codet differential; do
    CODEFOREST_RESAMPLE_N=8 bench --dataset humaneval --out "$HE" --graph resample --selector "$selector" \
        --min-candidates 8
done
bench --dataset humaneval --out "$HE" --graph codetree --graph bester --selector agreement --min-candidates 4
# issue 21 on apps_introductory150: direct and resample with the packaged prompts (apps-intro-1.5b/first-baselines
# holds rows written with other prompts, none of whose calls replays)
bench --dataset apps_introductory150 --out "$AI" --graph direct --graph resample
CODEFOREST_RESAMPLE_N=8 bench --dataset apps_introductory150 --out "$AI" --graph resample
for selector in agreement codet differential; do
    CODEFOREST_RESAMPLE_N=8 bench --dataset apps_introductory150 --out "$AI" --graph resample --selector "$selector" \
        --min-candidates 8
done
bench --dataset apps_introductory150 --out "$AI" --graph codetree --graph bester
bench --dataset apps_introductory150 --out "$AI" --graph codetree --graph bester --selector agreement --min-candidates 4
resample_at_tokens_of apps_introductory150 "$AI" codetree
# issue 15: the KB's topics from the search's own topic call, then RPM-MCTS with that KB and without it
# (a rerun that finds nothing to reclassify is left out of the log)
codeforest kb retopic --steps tools/kb_steps.jsonl --model local 2>&1 | grep --line-buffered -v '^reclassified 0 problems' \
    | tee -a measurements/kb/retopic.log
bench --dataset apps_introductory150 --out "$AI" --graph rpm_mcts
CODEFOREST_RPM_KB=false bench --dataset apps_introductory150 --out "$AI" --graph rpm_mcts
resample_at_tokens_of apps_introductory150 "$AI" rpm_mcts
# issue 16: CodePRM's GVR against RethinkMCTS and direct on apps_interview150, and PRM data from a split no bench uses;
# GVR's comparison with resampling (8 samples, and at its tokens) is finished before RethinkMCTS's ~10 hours start
AV=measurements/apps-interview-1.5b
bench --dataset apps_interview150 --out "$AV" --graph direct --graph resample
# GVR at the released reward (its committed row); the paper's, the default, is pending.sh's row
CODEFOREST_GVR_REWARD=pub_test bench --dataset apps_interview150 --out "$AV" --graph gvr
# resample with 8 samples, the first public-passing one: the first 8 of the 20-sample run, replayed from the cache
CODEFOREST_RESAMPLE_N=8 bench --dataset apps_interview150 --out "$AV" --graph resample
# resampling at that GVR row's mean tokens (--tokens-of takes the row at GVR's defaults)
CODEFOREST_RESAMPLE_N=1000 bench --dataset apps_interview150 --out "$AV" --graph resample --token-budget 75626
bench --dataset apps_interview150 --out "$AV" --graph rethink_mcts
resample_at_tokens_of apps_interview150 "$AV" rethink_mcts
# twice: the second pass retries a problem the first left unwritten (a model fault or a raise), replaying its calls;
# 4 problems at once like the benches
for pass in 1 2; do
    echo "== $(date -u +%FT%TZ) collect-prm, pass $pass"
    CODEFOREST_GVR_REWARD=pub_test codeforest collect-prm --dataset mbpp500 --sample 20 --seed 5 --model local \
        --cache --request-timeout 7200 --concurrency "${QUEUE_CONCURRENCY:-4}" --out measurements/prm-data/mbpp500-20.jsonl
done
echo "== $(date -u +%FT%TZ) queue done"
