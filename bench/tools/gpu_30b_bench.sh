#!/usr/bin/env bash
# The Qwen3-30B-A3B shape served on one GPU as a user starts it (`moe-serve --device cuda
# --kernel-dtype bf16`, a random bf16 checkpoint, routed-experts capture on), measured with
# moe-bench over ZeroMQ: bench/RESULTS.md's "GPU serving at rollout scale" rows. Needs build/ with
# moe-serve, moe-bench and moe-make-checkpoint.
#
#   bench/tools/gpu_30b_bench.sh LOG_DIR WORKLOAD... [-- MOE_SERVE_FLAGS...]
#
# Workloads: prompt (2,048-token prompts: c=1 for TTFT, c=8 for prompt throughput), itl32
# (2,048-token prompts at c=32, 128 tokens out: ITL p50/p99), decode1 (16 → 128 at c=1), decode32
# (16 → 128 at c=32), decode128 (16 → 256 at c=128), decode
# (16 → 256 at c=64 and c=128),
# rollout (256 prompts of 1,024 tokens, 1,024 out, c=256). The checkpoint (61 GB) is written once
# to $MOE_30B_CHECKPOINT (default: /dev/shm where it has room, else /tmp); the workload
# `checkpoint` alone only writes it. MOE_BENCH_CONFIG names another shape's config (e.g.
# bench/configs/moonlight-16b-a3b.json): its checkpoint goes beside, named after the config, and it
# is served without a tokenizer (--skip-tokenizer-init: moe-bench sends token ids). MOE_BENCH_DUMMY=1
# writes no checkpoint: the server makes the same weights on its GPUs (--load-format dummy), so a
# model larger than the disk (Qwen3-235B-A22B) is measured too; MOE_SERVE_FLAGS after -- add e.g.
# --tp-size 2.
set -uo pipefail
logs=$1
shift
workloads=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do workloads+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
mkdir -p "$logs"
shm_gb=$(df -BG --output=avail /dev/shm 2>/dev/null | tail -1 | tr -dc 0-9)
config=${MOE_BENCH_CONFIG:-bench/configs/qwen3-30b-a3b.json}
shape=$(basename "$config" .json)
tokenizer=(--tokenizer-path tests/data/qwen3-tokenizer)
[ "$shape" = qwen3-30b-a3b ] || tokenizer=(--skip-tokenizer-init)
default_dir=/tmp/$shape
[ "${shm_gb:-0}" -gt 66 ] && default_dir=/dev/shm/$shape
ckpt=${MOE_30B_CHECKPOINT:-$default_dir}
if [ "${MOE_BENCH_DUMMY:-0}" = 1 ]; then
  # --load-format dummy: the same weights made on the GPU from config.json alone, no checkpoint written.
  ckpt=/tmp/$shape-dummy
  mkdir -p "$ckpt"
  cp "$config" "$ckpt/config.json"
  set -- --load-format dummy --dummy-seed 1 "$@"
elif [ ! -f "$ckpt/config.json" ]; then
  start=$(date +%s)
  build/bench/moe-make-checkpoint --config "$config" --out "$ckpt" --seed 1 \
    >"$logs/make_checkpoint.log" 2>&1 || { tail -5 "$logs/make_checkpoint.log"; exit 1; }
  echo "== checkpoint $ckpt written in $(($(date +%s) - start)) s ($(du -sh "$ckpt" | cut -f1))"
fi
[ "${workloads[*]}" = checkpoint ] && exit 0

endpoint=tcp://127.0.0.1:30123
build/actors/moe-serve --model-path "$ckpt" "${tokenizer[@]}" --device cuda \
  --kernel-dtype bf16 --port 0 --zmq-endpoint "$endpoint" --enable-return-routed-experts "$@" \
  >"$logs/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT
start=$(date +%s)
until grep -q "\] ready$" "$logs/server.log"; do
  kill -0 $server 2>/dev/null || { echo "moe-serve exited:"; tail -5 "$logs/server.log"; exit 1; }
  sleep 1
done
echo "== moe-serve ready in $(($(date +%s) - start)) s: $*"
grep -E "KV pool sized|KV cache:" "$logs/server.log"
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader

bench() {  # NAME moe-bench flags...
  local name=$1
  shift
  timeout 240 build/bench/moe-bench --endpoint "$endpoint" --return-routed-experts --output-md "$logs/$name.md" "$@" \
    >"$logs/$name.log" 2>&1 || echo "moe-bench $name failed: $(tail -2 "$logs/$name.log")"
  echo "-- $name: moe-bench $*"
  grep -E "^\|" "$logs/$name.md" 2>/dev/null | tail -n +1
}
for workload in "${workloads[@]}"; do
  case $workload in
    prompt)
      bench prompt_c1 --input-len 2048 --output-len 4 --concurrency 1 --num-prompts 8 --warmup-prompts 2
      bench prompt_c8 --input-len 2048 --output-len 1 --concurrency 8 --num-prompts 64 --warmup-prompts 8 ;;
    itl32) bench itl32 --input-len 2048 --output-len 128 --concurrency 32 --num-prompts 96 --warmup-prompts 8 ;;
    decode1) bench decode1 --input-len 16 --output-len 128 --concurrency 1 --num-prompts 4 --warmup-prompts 1 ;;
    decode32) bench decode32 --input-len 16 --output-len 128 --concurrency 32 --num-prompts 64 --warmup-prompts 8 ;;
    decode128) bench decode128 --input-len 16 --output-len 256 --concurrency 128 --num-prompts 256 --warmup-prompts 16 ;;
    decode) bench decode --input-len 16 --output-len 256 --concurrency 64,128 --num-prompts 256 --warmup-prompts 16 ;;
    rollout) bench rollout --input-len 1024 --output-len 1024 --concurrency 256 --num-prompts 256 --warmup-prompts 0 \
               --temperature 1 ;;
    *) echo "unknown workload $workload" ;;
  esac
done
grep -E "error|Error|failed" "$logs/server.log" | head -5
