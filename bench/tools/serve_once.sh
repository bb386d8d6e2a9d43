#!/bin/bash
# Starts one moe-serve build on the benchmark model, runs moe-bench's standard load against it
# (16 -> 128 tokens at concurrency 1, 8, 32, routed experts returned) and stops it, printing the
# start-up time, the server's resident memory, moe-bench's table rows and the CPU seconds the server
# spent under the load (user + system: on a machine shared with other work, the fairer per-build
# figure than wall-clock tokens/s). Alternate two builds (A B A B ...) with fresh seeds to compare
# them on a noisy machine. CONCURRENCY (default 1,8,32) changes the load's concurrency levels;
# NUM_PROMPTS (default 32) the prompts each level runs; SERVE_FLAGS adds moe-serve flags (e.g.
# "--quantization int4").
#
# usage: bench/tools/serve_once.sh MOE_SERVE MOE_BENCH MODEL_DIR SEED PORT
#   (PORT for HTTP; PORT + 1 for ZeroMQ)
set -euo pipefail
serve=$1 bench=$2 model=$3 seed=$4 port=$5
log=$(mktemp)
start_ns=$(date +%s%N)
"$serve" --model-path "$model" --zmq-endpoint "tcp://127.0.0.1:$((port + 1))" --port "$port" \
  --enable-return-routed-experts ${SERVE_FLAGS:-} >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
until grep -q "\] ready" "$log"; do
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.2
done
echo "== $serve seed $seed $(date +%H:%M:%S): ready after $((($(date +%s%N) - start_ns) / 1000000)) ms, $(grep VmRSS /proc/$pid/status)"
cpu_seconds() { awk '{printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' /proc/$pid/stat; }
cpu_before=$(cpu_seconds)
"$bench" --endpoint "tcp://127.0.0.1:$((port + 1))" --num-prompts "${NUM_PROMPTS:-32}" --warmup-prompts 2 --input-len 16 \
  --output-len 128 --concurrency "${CONCURRENCY:-1,8,32}" --seed "$seed" | grep "^| c="
echo "server CPU seconds under the load: $(awk -v a="$cpu_before" -v b="$(cpu_seconds)" 'BEGIN {printf "%.2f", b - a}')"
