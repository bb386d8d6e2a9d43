#!/usr/bin/env bash
# moe-serve against llama.cpp's llama-server on the same weights, driven by the same client
# (moe-bench, closed loop, /v1/completions, 16-token prompts, 128 generated tokens, greedy,
# ignore_eos), 2 threads each. Servers run one at a time and the configurations alternate round by
# round (A B C ... A B C ...), each round with its own prompts (the same prompts for every
# configuration in a round), because the machine is shared: compare the ratios and the servers' CPU
# seconds, not one wall-clock figure. Also the 512-token prefill (bench_model against llama-bench
# -p 512) and batch-1 decode (bench_model against llama-bench -n 128).
#
# usage: bench/tools/llama_compare.sh LLAMA_DIR MODEL_DIR GGUF_DIR OUT_DIR
#   LLAMA_DIR  bench/tools/build_llama_cpp.sh's output (src/gguf-py, build/bin/llama-*)
#   MODEL_DIR  the benchmark checkpoint, tokenizer files beside it (bench/RESULTS.md, "Benchmark model")
#   GGUF_DIR   where its GGUFs are kept: bf16 written by bench/tools/gguf_from_checkpoint.py, q8_0 and
#              q4_0 by llama-quantize, each only when absent
#   OUT_DIR    results: serving.tsv (one line per run), summary.md, kernels.txt, server logs
# Env: SECTIONS (default "check bf16 quantized kernels"; quantized-int: quantized with --kernel-dtype int8),
#      ROUNDS (2), PROMPTS_C1 (4), PROMPTS_C8 (8),
#      PROMPTS_C32 (32), FIRST_ROUND (1; a later invocation appending rounds to OUT_DIR sets it),
#      BUILD (build: moe-serve, moe-bench, bench_model), PORT (18700), SEED (1000), OUTPUT_LEN (128;
#      a few tokens for a quick check that the whole script runs).
set -euo pipefail
llama=$1 model=$2 gguf_dir=$3 out=$4
build=${BUILD:-build} port=${PORT:-18700} output_len=${OUTPUT_LEN:-128} rounds=${ROUNDS:-2} seed=${SEED:-1000}
sections=${SECTIONS:-check bf16 quantized kernels}
tools=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$gguf_dir" "$out"
export MOE_NUM_THREADS=2
threads=2
tsv=$out/serving.tsv

gguf_file() { echo "$gguf_dir/$(basename "$model")-$1.gguf"; }
if [ ! -f "$(gguf_file bf16)" ]; then
  /usr/bin/python3 "$tools/gguf_from_checkpoint.py" --gguf-py "$llama/src/gguf-py" --model-path "$model" \
    --out "$(gguf_file bf16)"
fi
for q in q8_0 q4_0; do
  [ -f "$(gguf_file $q)" ] || "$llama/build/bin/llama-quantize" "$(gguf_file bf16)" "$(gguf_file $q)" "${q^^}" "$threads"
done

# shellcheck source=bench/tools/server_process.sh
. "$tools/server_process.sh"

# start_server CONFIG [PORT]: starts one configuration's server (on $port unless given) and waits
# for /health. moe:FLAGS runs moe-serve with FLAGS; llama:TYPE runs llama-server on the TYPE GGUF
# with 32 slots of 256 tokens.
start_server() {
  local config=$1 port=${2:-$port} log="$out/server-${1//[^a-z0-9_]/_}.log" started
  started=$(date +%s%N)
  case $config in
    moe:*)
      # shellcheck disable=SC2086  # the flags are words
      "$build/actors/moe-serve" --model-path "$model" --port "$port" --enable-return-routed-experts \
        ${config#moe:} >"$log" 2>&1 &
      ;;
    llama:*)
      # Quantized types go through llama.cpp's AMX kernels when the CPU advertises AMX (this machine's
      # does), and on this VM they die with SIGILL at the warm-up; --no-repack keeps them off AMX (and
      # off the AVX-512 repacked layouts too).
      local repack=()
      [ "${config#llama:}" = bf16 ] || repack=(--no-repack)
      "$llama/build/bin/llama-server" -m "$(gguf_file "${config#llama:}")" --host 127.0.0.1 --port "$port" \
        -t "$threads" -tb "$threads" -np 32 -c $((32 * 256)) "${repack[@]}" >"$log" 2>&1 &
      ;;
  esac
  server_pid=$!
  wait_for_health "http://127.0.0.1:$port" "$log"
  echo "# $config ready after $((($(date +%s%N) - started) / 1000000)) ms, $(grep VmRSS /proc/$server_pid/status)"
}

# measure SECTION.ROUND CONFIG CONCURRENCY: one moe-bench run against the running server, one line to $tsv.
measure() {
  local round=$1 config=$2 c=$3 prompts before row
  case $c in 1) prompts=${PROMPTS_C1:-4} ;; 8) prompts=${PROMPTS_C8:-8} ;; *) prompts=${PROMPTS_C32:-32} ;; esac
  before=$(server_cpu_seconds)
  row=$("$build/bench/moe-bench" --endpoint "http://127.0.0.1:$port" --api openai --num-prompts "$prompts" \
          --warmup-prompts 1 --input-len 16 --output-len "$output_len" --concurrency "$c" \
          --seed $((seed + 100 * ${round##*.} + c)) | grep "^| c=")
  # row: | c=N | done/failed | req/s | output tok/s | TTFT ... | ITL ... |
  local tok_s finished cpu
  tok_s=$(echo "$row" | awk -F'|' '{gsub(/ /, "", $5); print $5}')
  finished=$(echo "$row" | awk -F'|' '{gsub(/ /, "", $3); print $3}')
  cpu=$(awk -v a="$before" -v b="$(server_cpu_seconds)" 'BEGIN {printf "%.2f", b - a}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$config" "$c" "$finished" "$tok_s" "$cpu" "$(date +%H:%M:%S)" | tee -a "$tsv"
}

# serving SECTION CONCURRENCIES CONFIG...: every round, each configuration's server at each concurrency.
serving() {
  local section=$1 levels=$2
  shift 2
  local first=${FIRST_ROUND:-1}
  for round in $(seq "$first" $((first + rounds - 1))); do
    for config in "$@"; do
      start_server "$config"
      for c in ${levels//,/ }; do measure "$section.$round" "$config" "$c"; done
      stop_server
    done
  done
}

for section in $sections; do
  case $section in
    check)
      # The GGUF against moe-serve: greedy ids of random prompts (float32 and bf16 products).
      for ours in "moe:" "moe:--kernel-dtype bf16"; do
        start_server "llama:bf16"; llama_pid=$server_pid; server_pid=
        start_server "$ours" $((port + 2))
        echo "## greedy ids, $ours against llama:bf16" | tee -a "$out/check.txt"
        /usr/bin/python3 "$tools/greedy_ids_compare.py" --moe-url "http://127.0.0.1:$((port + 2))" \
          --llama-url "http://127.0.0.1:$port" | tee -a "$out/check.txt" || true
        stop_server; server_pid=$llama_pid; stop_server
      done
      ;;
    bf16) serving bf16 1,8,32 "moe:" "moe:--kernel-dtype bf16" "llama:bf16" ;;
    quantized) serving quantized 1,32 "moe:--quantization int8" "llama:q8_0" "moe:--quantization int4" "llama:q4_0" ;;
    quantized-int) serving quantized-int 1,32 "moe:--quantization int8 --kernel-dtype int8" "llama:q8_0" \
      "moe:--quantization int4 --kernel-dtype int8" "llama:q4_0" ;;
    kernels)
      {
        echo "## llama-bench: prefill 512 tokens and decode 128 tokens at batch 1, $threads threads"
        # BF16 only: llama-bench has no --no-repack, and on the quantized files it takes the AMX kernels
        # that die on this VM (see start_server); the serving section covers Q8_0/Q4_0.
        "$llama/build/bin/llama-bench" -m "$(gguf_file bf16)" -t "$threads" -p 512 -n 128 -r 3 -o md 2>/dev/null | grep '^|' 
        echo "## bench_model: BM_Prefill/tokens:512 and BM_DecodeStep/batch:1 (float32 and bf16 products; int8, int4)"
        for quantization in "" int8 int4; do
          filter="BM_DecodeStep/batch:1/kernel:0"  # bf16 products take bf16 checkpoints only
          [ -n "$quantization" ] || filter="BM_Prefill/|BM_DecodeStep/batch:1/"
          echo "# quantization: ${quantization:-none (bf16)}"
          MOE_BENCH_MODEL=$model MOE_BENCH_QUANTIZATION=$quantization "$build/bench/bench_model" \
            --benchmark_filter="$filter" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
            2>/dev/null | grep -E "median" || true
        done
      } | tee -a "$out/kernels.txt"
      ;;
    *) echo "unknown section '$section' (check, bf16, quantized, quantized-int, kernels)" >&2; exit 2 ;;
  esac
done

# Mean output tok/s and server CPU seconds per 1000 tokens, per configuration and concurrency.
if [ -f "$tsv" ]; then
  awk -F'\t' -v output_len="$output_len" '{split($1, s, "."); key = s[1] "\t" $2 "\t" $3; n[key]++; tok[key] += $5; cpu[key] += $6
               split($4, d, "/"); out_tokens[key] += d[1] * output_len}
              END {for (k in n) {split(k, f, "\t")
                     printf "| %s | %s | %s | %d | %.1f | %.2f |\n", f[1], f[2], f[3], n[k], tok[k] / n[k], 1000 * cpu[k] / out_tokens[k]}}' \
    "$tsv" | sort -t'|' -k2,2 -k4,4n -k3,3 >"$out/summary.rows"
  { echo "| section | config | c | runs | mean output tok/s | server CPU s per 1000 tokens |"
    echo "| --- | --- | --- | --- | --- | --- |"
    cat "$out/summary.rows"; } | tee "$out/summary.md"
  rm "$out/summary.rows"
fi
