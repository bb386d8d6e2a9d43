#!/usr/bin/env bash
# Quality and batch-1 speed of the code model's quantized forms side by side (bench/RESULTS.md,
# "Quality of quantized weights (code model)"): held-out perplexity (bench/tools/perplexity.py against
# moe-serve; llama.cpp's llama-perplexity on its GGUFs) and batch-1 decode speed (moe-bench, 16-token
# prompts, 128 new tokens, c = 1, against moe-serve; llama-bench -p 0 -n 128 on the GGUFs), 2 threads.
#
# usage: bench/tools/quant_quality_bench.sh LLAMA_DIR WORK_DIR
#   LLAMA_DIR  bench/tools/build_llama_cpp.sh's output (src/gguf-py; build/bin/llama-{quantize,perplexity,
#              bench,tokenize})
#   WORK_DIR   held-out and calibration text (bench/tools/code_corpus.py), the GPTQ and RTN checkpoints
#              (bench/tools/gptq_quantize.py), the GGUFs, each made when absent; results in WORK_DIR/out:
#              quality.jsonl (one line per variant), speed.tsv (one line per run: round, variant, output
#              tok/s, CPU seconds per 1000 tokens), expert_load.json and .png
# Env: SECTIONS (default "prepare quality llama-quality speed"), ROUNDS (3: speed rounds, the variants alternated in
#      each), PROMPTS (8), BUILD (build), PORT (18720), MODEL (tests/data/code-moe), CALIBRATION_SEQS (128),
#      LLAMA_CHUNKS (all: llama-perplexity's --chunks; it takes a few times our time a chunk on this
#      model, so the first N chunks may be compared with perplexity.py score --max-chunks N).
set -euo pipefail
llama=$1 work=$2
build=${BUILD:-build} port=${PORT:-18720} rounds=${ROUNDS:-3} prompts=${PROMPTS:-8}
model=$(realpath "${MODEL:-tests/data/code-moe}")
tools=$(cd "$(dirname "$0")" && pwd)
out=$work/out
mkdir -p "$out"
export MOE_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1
url=http://127.0.0.1:$port

# Our variants: name, model directory, moe-serve flags.
ours=(
  "bf16|$model|"
  "bf16, bf16 products|$model|--kernel-dtype bf16"
  "int8 at load|$model|--quantization int8"
  "int4 at load, g128|$model|--quantization int4"
  "int4 at load, g32|$model|--quantization int4 --quantization-group-size 32"
  "RTN int4 g32 (GPTQ format)|$work/rtn-int4-g32|"
  "GPTQ int4 g32|$work/gptq-int4-g32|"
  "GPTQ int4 g32, int8 products|$work/gptq-int4-g32|--kernel-dtype int8"
  "GPTQ int4 g32, float lm_head|$work/gptq-int4-g32-float-head|"
)
ggufs=(bf16 q8_0 q4_0)
gguf() { echo "$work/code-moe-$1.gguf"; }

# shellcheck source=bench/tools/server_process.sh
. "$tools/server_process.sh"

# serve DIR FLAGS: moe-serve on $port, routed experts on (for /expert_load), until stop_server.
serve() {
  # shellcheck disable=SC2086  # the flags are words
  "$build/actors/moe-serve" --model-path "$1" --port "$port" --enable-return-routed-experts $2 \
    >"$out/server.log" 2>&1 &
  server_pid=$!
  wait_for_health "$url" "$out/server.log"
}

prepare() {
  [ -f "$work/heldout.txt" ] || /usr/bin/python3 "$tools/code_corpus.py" --split heldout --out "$work/heldout.txt" \
    --list "$work/heldout.list"
  [ -f "$work/calibration.txt" ] || /usr/bin/python3 "$tools/code_corpus.py" --split train --max-bytes 2e6 \
    --out "$work/calibration.txt"
  if [ ! -f "$work/calibration.ids" ]; then
    serve "$model" ""
    /usr/bin/python3 "$tools/perplexity.py" tokenize "$url" --text "$work/calibration.txt" --out "$work/calibration.ids"
    stop_server
  fi
  [ -d "$work/rtn-int4-g32" ] || /usr/bin/python3 "$tools/gptq_quantize.py" --model-path "$model" \
    --out "$work/rtn-int4-g32" --method rtn --group-size 32
  [ -d "$work/gptq-int4-g32" ] || /usr/bin/python3 "$tools/gptq_quantize.py" --model-path "$model" \
    --out "$work/gptq-int4-g32" --method gptq --group-size 32 --calibration-ids "$work/calibration.ids" \
    --calibration-seqs "${CALIBRATION_SEQS:-128}" --seq-len 512 | tee "$out/gptq_errors.jsonl"
  # As llama.cpp's Q4_0 keeps the tied embedding (lm_head) in Q8_0: this one leaves it in bf16.
  [ -d "$work/gptq-int4-g32-float-head" ] || /usr/bin/python3 "$tools/gptq_quantize.py" --model-path "$model" \
    --out "$work/gptq-int4-g32-float-head" --method gptq --group-size 32 --calibration-ids "$work/calibration.ids" \
    --calibration-seqs "${CALIBRATION_SEQS:-128}" --seq-len 512 --float-lm-head >/dev/null
}

make_ggufs() {
  [ -f "$(gguf bf16)" ] || /usr/bin/python3 "$tools/gguf_from_checkpoint.py" --gguf-py "$llama/src/gguf-py" \
    --model-path "$model" --out "$(gguf bf16)"
  for q in q8_0 q4_0; do
    [ -f "$(gguf $q)" ] || "$llama/build/bin/llama-quantize" "$(gguf bf16)" "$(gguf $q)" "${q^^}" 2 \
      >"$out/quantize-$q.log" 2>&1
  done
}

quality() {
  local entry name dir flags
  for entry in "${ours[@]}"; do
    IFS='|' read -r name dir flags <<<"$entry"
    serve "$dir" "$flags"
    [ "$name" = bf16 ] && curl -sf -X POST "$url/expert_load/reset" >/dev/null
    /usr/bin/python3 "$tools/perplexity.py" score "$url" --text "$work/heldout.txt" --label "$name" \
      --out "$out/quality.jsonl"
    if [ "$name" = bf16 ]; then
      curl -sf "$url/expert_load" >"$out/expert_load.json"
      /usr/bin/python3 "$tools/perplexity.py" tokenize "$url" --text "$work/heldout.txt" --out "$work/heldout.ids"
    fi
    stop_server
  done
  /usr/bin/python3 "$tools/expert_load_plot.py" "$out/expert_load.json" --png "$out/expert_load.png" \
    --title "code model (tests/data/code-moe), held-out code" | tee "$out/expert_load.md"
}

llama_quality() {
  local q
  make_ggufs
  # llama.cpp tokenizes the same text to the same ids (its whole-file tokenization, --ids). Its tools
  # turn "\\" and "\n" in a -f file into escapes by default: --no-escape keeps the text as it is.
  "$llama/build/bin/llama-tokenize" -m "$(gguf bf16)" -f "$work/heldout.txt" --ids --log-disable --no-bos --no-escape \
    >"$out/llama-heldout.ids" 2>/dev/null
  /usr/bin/python3 - "$work/heldout.ids" "$out/llama-heldout.ids" <<'EOF' | tee "$out/tokens-agree.txt"
import json, sys
import numpy as np
ours = np.fromfile(sys.argv[1], dtype=np.int32).tolist()
theirs = json.loads(open(sys.argv[2]).read())
print(f"held-out ids: ours {len(ours)}, llama.cpp {len(theirs)}, identical: {ours == theirs}")
EOF
  for q in "${ggufs[@]}"; do
    "$llama/build/bin/llama-perplexity" -m "$(gguf "$q")" -f "$work/heldout.txt" -c 512 -b 512 -t 2 --no-escape \
      --chunks "${LLAMA_CHUNKS:--1}" \
      >"$out/llama-perplexity-$q.log" 2>&1
    grep -o "Final estimate: PPL = [0-9.]* +/- [0-9.]*" "$out/llama-perplexity-$q.log" | sed "s/^/llama $q: /" \
      | tee -a "$out/llama-perplexity.txt"
  done
}

# One moe-bench run (c = 1) against the running server: "output tok/s<TAB>server CPU s per 1000 tokens"
# (warm-up requests counted in the CPU time's tokens).
moe_bench_run() {
  local before tok_s
  before=$(server_cpu_seconds)
  tok_s=$("$build/bench/moe-bench" --endpoint "$url" --num-prompts "$prompts" --warmup-prompts 2 --input-len 16 \
    --output-len 128 --vocab-size 4095 --concurrency 1 --seed "$1" | grep "^| c=" | awk -F'|' '{gsub(/ /, "", $5); print $5}')
  awk -v t="$tok_s" -v a="$before" -v b="$(server_cpu_seconds)" -v n=$(((prompts + 2) * 128)) \
    'BEGIN {printf "%s\t%.2f", t, 1000 * (b - a) / n}'
}

# One llama-bench run (batch 1, 128 tokens, 3 repetitions after a 1-token warm-up) of a GGUF: the same two
# figures, its CPU time the whole process's.
llama_bench_run() {
  local tok_s
  tok_s=$(/usr/bin/time -f "%U %S" -o "$out/time.txt" "$llama/build/bin/llama-bench" -m "$(gguf "$1")" -t 2 -p 0 \
    -n 128 -r 3 -o csv 2>/dev/null | tail -1 | awk -F, '{gsub(/"/, "", $(NF-1)); print $(NF-1)}')
  awk -v t="$tok_s" '{printf "%.2f\t%.2f", t, 1000 * ($1 + $2) / (3 * 128 + 1)}' "$out/time.txt"
}

speed() {
  local round entry name dir flags q
  make_ggufs
  for round in $(seq 1 "$rounds"); do
    for entry in "${ours[@]}"; do
      IFS='|' read -r name dir flags <<<"$entry"
      serve "$dir" "$flags"
      printf '%s\tmoe-serve %s\t%s\n' "$round" "$name" "$(moe_bench_run $((1000 + round)))" | tee -a "$out/speed.tsv"
      stop_server
    done
    for q in "${ggufs[@]}"; do
      printf '%s\tllama-bench %s\t%s\n' "$round" "$q" "$(llama_bench_run "$q")" | tee -a "$out/speed.tsv"
    done
  done
}

for section in ${SECTIONS:-prepare quality llama-quality speed}; do
  case $section in
    prepare | quality | speed) "$section" ;;
    llama-quality) llama_quality ;;
    *) echo "unknown section '$section' (prepare, quality, llama-quality, speed)" >&2; exit 2 ;;
  esac
done
