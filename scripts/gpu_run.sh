#!/usr/bin/env bash
# The GPU machine's whole check in one call: build the CUDA tests and benchmarks, run the tests, the
# GPU benchmarks on the benchmark model (written to $MOE_BENCH_MODEL on first use) and the same
# workload through Hugging Face transformers, each stage under its own time limit, logs into LOG_DIR.
#
#   eval "$(scripts/gpu_deps.sh --install)"     # where ZeroMQ & co. are missing (README, "GPU")
#   scripts/gpu_run.sh LOG_DIR [STAGE ...]      # stages: tests bench hf sanitize (default: all four), rl
#     (rl: a torch trainer's weight group, on GPUs 0 and 1 or both ranks on GPU 0, and GPU memory released
#      to a torch allocation and resumed)
set -uo pipefail
cd "$(dirname "$0")/.."
logs=$1
shift
stages=${*:-tests bench hf sanitize}
mkdir -p "$logs"
export MOE_BENCH_MODEL=${MOE_BENCH_MODEL:-/tmp/qwen3-moe-small}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee "$logs/gpu.txt"

# Google Benchmark may be missing there: then the tests still build, without bench_cuda.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${MOE_DEPS_CMAKE_FLAGS:-} >"$logs/cmake.log" 2>&1 ||
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOE_BUILD_BENCH=OFF ${MOE_DEPS_CMAKE_FLAGS:-} \
    >>"$logs/cmake.log" 2>&1 || { tail -20 "$logs/cmake.log"; exit 1; }
start=$(date +%s)
cmake --build build -j"$(nproc)" --target cuda_tests cuda_serving_tests >"$logs/build.log" 2>&1 ||
  { tail -30 "$logs/build.log"; exit 1; }
cmake --build build -j"$(nproc)" --target bench_cuda >>"$logs/build.log" 2>&1
echo "== built in $(($(date +%s) - start)) s"

for stage in $stages; do
  start=$(date +%s)
  case $stage in
    tests) timeout 200 build/tests/cuda_tests >"$logs/cuda_tests.log" 2>&1
           rc=$?
           grep -E "^\[  (PASSED|FAILED|SKIPPED) |^copies|^  +[0-9]+ |Failure" "$logs/cuda_tests.log" | head -60
           timeout 200 build/tests/cuda_serving_tests >"$logs/cuda_serving_tests.log" 2>&1 || rc=$?
           grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" "$logs/cuda_serving_tests.log" | head -40 ;;
    bench) timeout 240 build/bench/bench_cuda --benchmark_out="$logs/bench_cuda.json" >"$logs/bench_cuda.log" 2>&1
           rc=$?
           cat "$logs/bench_cuda.log" ;;
    hf) PYTHONUNBUFFERED=1 timeout 150 python3 bench/tools/hf_generate_bench.py "$MOE_BENCH_MODEL" >"$logs/hf.log" 2>&1
        rc=$?
        grep -E "^\||^transformers|Error" "$logs/hf.log" ;;
    sanitize) timeout 120 compute-sanitizer --tool memcheck --leak-check no build/tests/cuda_tests \
                --gtest_filter='CudaCaptureTest.*' >"$logs/sanitizer.log" 2>&1
              rc=$?
              grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$logs/sanitizer.log" ;;
    rl) cmake --build build -j"$(nproc)" --target moe-serve moe-make-checkpoint >>"$logs/build.log" 2>&1
        timeout 300 python3 tests/gpu/memory_release_test.py build/actors/moe-serve >"$logs/rl.log" 2>&1
        rc=$?
        timeout 600 python3 tests/gpu/nccl_weight_group_test.py build/actors/moe-serve build/bench/moe-make-checkpoint \
          >>"$logs/rl.log" 2>&1 || rc=$?
        tail -30 "$logs/rl.log" ;;
    *) echo "unknown stage $stage"; rc=2 ;;
  esac
  echo "== $stage: exit $rc, $(($(date +%s) - start)) s"
done
