#!/bin/bash
# Code completion on the trained code model (tests/data/code-moe), plain decoding against NGRAM and
# STANDALONE speculation (its draft: tests/data/code-moe-draft): for each configuration, ROUNDS times
# interleaved, starts moe-serve, runs bench/tools/code_completion_bench.py against it with BATCH
# concurrent requests (default 1) (the plain run's output ids are the reference the others are compared
# with) and stops it, printing the CPU seconds the server spent (user + system: on a shared machine a
# fairer figure than wall time). The server runs its kernels on MOE_NUM_THREADS threads (default here 1).
# MAX_TREE_EXPERTS (a list, e.g. "4 8 12") adds NGRAM and STANDALONE-chain runs whose verify passes read
# at most that many experts a layer. ONLY (an extended regex) keeps the configurations whose names match
# it, e.g. ONLY='plain|NGRAM'. SERVE_FLAGS go to every server (SERVE_FLAGS='--device cuda' on a GPU).
# usage: bench/tools/code_spec_bench.sh [PORT]   (ROUNDS, default 2; PROMPTS, default 16; NEW_TOKENS, default 128)
set -euo pipefail
cd "$(dirname "$0")/../.."
port=${1:-30400}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
configs=(
  "plain|"
  "NGRAM|--speculative-algorithm NGRAM"
  "NGRAM chain 12x1, min match 3|--speculative-algorithm NGRAM --speculative-num-steps 12 --speculative-eagle-topk 1 --speculative-num-draft-tokens 13 --speculative-ngram-min-match-window-size 3"
  "STANDALONE chain 4x1|--speculative-algorithm STANDALONE --speculative-draft-model-path tests/data/code-moe-draft --speculative-num-steps 4 --speculative-eagle-topk 1 --speculative-num-draft-tokens 5"
  "STANDALONE tree 4x2 (8)|--speculative-algorithm STANDALONE --speculative-draft-model-path tests/data/code-moe-draft"
)
for limit in ${MAX_TREE_EXPERTS:-}; do
  configs+=("NGRAM, max-tree-experts $limit|${configs[1]#*|} --max-tree-experts $limit"
            "STANDALONE chain 4x1, max-tree-experts $limit|${configs[3]#*|} --max-tree-experts $limit")
done
cpu_seconds() { awk '{printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }
for round in $(seq 1 "${ROUNDS:-2}"); do
  for config in "${configs[@]}"; do
    name=${config%%|*} flags=${config#*|}
    [[ -z ${ONLY:-} || $name =~ ${ONLY} ]] || continue
    log="$out/server.log"
    # shellcheck disable=SC2086
    MOE_NUM_THREADS=${MOE_NUM_THREADS:-1} build/actors/moe-serve --model-path tests/data/code-moe --port "$port" $flags ${SERVE_FLAGS:-} >"$log" 2>&1 &
    pid=$!
    until grep -q "\] ready" "$log"; do
      kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
      sleep 0.2
    done
    echo "== round $round: $name"
    if [ "$name" = plain ]; then check=(--save "$out/plain.json"); else check=(--compare "$out/plain.json"); fi
    cpu_before=$(cpu_seconds $pid)
    /usr/bin/python3 bench/tools/code_completion_bench.py "http://127.0.0.1:$port" --prompts "${PROMPTS:-16}" \
      --stride 3 --new-tokens "${NEW_TOKENS:-128}" --concurrency "${BATCH:-1}" "${check[@]}"
    echo "server CPU seconds: $(awk -v a="$cpu_before" -v b="$(cpu_seconds $pid)" 'BEGIN {printf "%.2f", b - a}')"
    kill $pid && wait $pid 2>/dev/null || true
  done
done
