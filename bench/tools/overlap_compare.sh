#!/bin/bash
# Overlapped scheduling side by side, in one run: the model's own batch-1 decode step (bench_model,
# float32 products, context 128) and moe-serve at concurrency 1 with overlap on and off
# (--disable-overlap-schedule), alternated ROUNDS times with fresh prompts (serve_once.sh: 16 -> 128
# tokens over ZeroMQ, routed experts returned). Prints each run's output tokens/s and the ratios the
# serving-speed target is stated in: serving tok/s at concurrency 1 over one decode step's tok/s.
#
# usage: bench/tools/overlap_compare.sh BUILD_DIR MODEL_DIR [ROUNDS] [PORT]
set -euo pipefail
build=$1 model=$2 rounds=${3:-3} port=${4:-30300}
here=$(dirname "$0")
step_ms=$(MOE_BENCH_MODEL=$model "$build/bench/bench_model" --benchmark_filter='BM_DecodeStep/batch:1/kernel:0/' \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
  awk -F, '/_median"/ {print $3}')
echo "decode step, batch 1: ${step_ms} ms (median of 5) = $(awk -v m="$step_ms" 'BEGIN {printf "%.2f", 1000 / m}') tok/s"
run_once() {  # $1: extra moe-serve flags, $2: seed
  SERVE_FLAGS="$1" CONCURRENCY=1 NUM_PROMPTS=${NUM_PROMPTS:-8} \
    "$here/serve_once.sh" "$build/actors/moe-serve" "$build/bench/moe-bench" "$model" "$2" "$port" |
    awk -F'|' '/^\| c=1/ {gsub(/ /, "", $5); print $5}'
}
for round in $(seq 1 "$rounds"); do
  on=$(run_once "" $((500 + round)))
  off=$(run_once "--disable-overlap-schedule" $((600 + round)))
  awk -v r="$round" -v on="$on" -v off="$off" -v m="$step_ms" 'BEGIN {
    step = 1000 / m
    printf "round %d: overlap on %.2f tok/s (%.3f of the decode step), off %.2f tok/s (%.3f); on/off %.3f\n",
           r, on, on / step, off, off / step, on / off }'
done
