#!/bin/bash
# Pipeline parallelism on the CPU, side by side: the benchmark model served by one model worker
# process pinned to one core (--pp-size 1) and by two pipeline stages, each a --role worker process
# pinned to a core of its own (--pp-size 2). The front (tokenizer, scheduler, detokenizer) runs on
# another core in both; MOE_NUM_THREADS=1 everywhere. Runs A B A B ... (ROUNDS, default 2) with fresh
# prompts per pair, printing moe-bench's row at CONCURRENCY (default 32) and each worker process's
# resident memory after its load.
#
# usage: bench/tools/pp_bench.sh MOE_SERVE MOE_BENCH MODEL_DIR
#   FRONT_CORE (default 0), STAGE_CORES (default "1 2"; the single stage uses the first),
#   PROMPTS (default 64), INPUT_LEN (default 16), OUTPUT_LEN (default 64), PP_LAYER_SPLIT (--pp-layer-split of the two-stage
#   run, such as 7,5: the last stage also holds lm_head; default: balanced by layer count), CHUNK
#   (--chunked-prefill-size, default 8192: small chunks give a long prefill many micro-batches)
set -euo pipefail
serve=$1 bench=$2 model=$3
front_core=${FRONT_CORE:-0}
read -r -a cores <<<"${STAGE_CORES:-1 2}"
key=$(mktemp -d)/deployment.key  # the processes' tcp:// sockets authenticate each other with it
"$serve" --make-internal-key "$key" >/dev/null
common=(--model-path "$model" --enable-return-routed-experts --max-total-tokens 8192 --chunked-prefill-size "${CHUNK:-8192}"
        --internal-key-file "$key")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

# run PP SEED BASE_PORT: one deployment, one load, then everything stopped.
run() {
  local pp=$1 seed=$2 base=$3 logdir
  logdir=$(mktemp -d)
  local scheduler="tcp://127.0.0.1:$((base + 9))" workers=() split=()
  ((pp > 1)) && [ -n "${PP_LAYER_SPLIT:-}" ] && split=(--pp-layer-split "$PP_LAYER_SPLIT")
  for ((rank = 0; rank < pp; rank++)); do
    local flags=("${split[@]}" --role worker --pp-size "$pp" --pp-rank "$rank" --worker-endpoint "tcp://127.0.0.1:$((base + rank))"
                 --scheduler-endpoint "$scheduler")
    ((rank + 1 < pp)) && flags+=(--pp-next-endpoint "tcp://127.0.0.1:$((base + rank + 1))")
    MOE_NUM_THREADS=1 taskset -c "${cores[$rank]}" "$serve" "${common[@]}" "${flags[@]}" >"$logdir/stage$rank.log" 2>&1 &
    workers+=($!)
  done
  MOE_NUM_THREADS=1 taskset -c "$front_core" "$serve" "${common[@]}" "${split[@]}" --pp-size "$pp" --port 0 \
    --worker-endpoint "tcp://127.0.0.1:$base" --scheduler-endpoint "$scheduler" \
    --zmq-endpoint "tcp://127.0.0.1:$((base + 8))" >"$logdir/front.log" 2>&1 &
  local front=$!
  pids=("${workers[@]}" "$front")
  until grep -q "connected" "$logdir/front.log"; do
    kill -0 "$front" 2>/dev/null || { cat "$logdir"/*.log; exit 1; }
    sleep 0.5
  done
  echo "== pp $pp ${split[*]}, seed $seed, $(date +%H:%M:%S)"
  "$bench" --endpoint "tcp://127.0.0.1:$((base + 8))" --num-prompts "${PROMPTS:-64}" --warmup-prompts 2 --input-len "${INPUT_LEN:-16}" \
    --output-len "${OUTPUT_LEN:-64}" --concurrency "${CONCURRENCY:-32}" --seed "$seed" | grep "^| c="
  for ((rank = 0; rank < pp; rank++)); do
    echo "stage $rank of $pp: $(grep VmRSS "/proc/${workers[$rank]}/status")"
  done
  echo "front: $(grep VmRSS "/proc/$front/status")"
  kill "${pids[@]}"
  wait "${pids[@]}" 2>/dev/null || true
  rm -rf "$logdir"
}

for ((round = 0; round < ${ROUNDS:-2}; round++)); do
  run 1 $((1000 + round)) 31000
  run 2 $((1000 + round)) 31100
done
