#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, AddressSanitizer + UndefinedBehaviorSanitizer) into
# ./build-fuzz and runs each for FUZZ_SECONDS seconds (default 20) from its seed corpus in
# fuzz/corpus/<target>/ (new inputs go to build-fuzz/corpus/, the repository's seeds stay as they are).
# Fails on a crash, a sanitizer report or running out of memory (2 GiB); the input that did it is left
# in build-fuzz/crashes/. An input slower than 10 s only warns: on a loaded CI machine the ASan build can
# be that slow by chance, and a flaky timeout must not fail CI. FUZZ_TARGETS="fuzz_jinja ..." runs only
# those. Needs clang and its runtime libraries (scripts/install_deps.sh installs them).
# By default a run is reproducible: libFuzzer's seed is fixed (FUZZ_SEED=1) and each target stops after
# FUZZ_RUNS inputs (30000) if FUZZ_SECONDS does not stop it first, so CI walks the same inputs for the
# same code and fails only where a change opened a path to a crash. A campaign that searches further:
# FUZZ_SEED=0 (a random seed) FUZZ_RUNS=-1 (no limit) FUZZ_SECONDS=600 scripts/fuzz.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang++ >/dev/null; then
  echo "clang++ is missing: run scripts/install_deps.sh (it installs clang and libclang-rt-dev)" >&2
  exit 1
fi
seconds="${FUZZ_SECONDS:-20}"
runs="${FUZZ_RUNS:-30000}"
seed="${FUZZ_SEED:-1}"
# Only the libraries the targets link are built: no tests, programs, benchmarks or CUDA. -O1 with line
# tables is the usual fuzzing build: it compiles much faster than -O2 -g and still runs quickly.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER=clang++ -DMOE_FUZZ=ON -DMOE_BUILD_TESTS=OFF -DMOE_BUILD_BENCH=OFF -DMOE_BUILD_TOOLS=OFF -DMOE_CUDA=OFF >/dev/null
cmake --build build-fuzz --target fuzz_all -j "$(nproc)"
targets="${FUZZ_TARGETS:-$(cd fuzz && ls fuzz_*.cpp | sed 's/\.cpp$//')}"
mkdir -p build-fuzz/crashes
timeouts=""
for target in $targets; do
  mkdir -p "build-fuzz/corpus/$target"
  echo "== $target ($seconds s)"
  log="build-fuzz/$target.log"
  status=0
  # libFuzzer stops itself after max_total_time; the outer timeout only guards against a target that
  # cannot be stopped, so no target takes more than FUZZ_SECONDS + 60 s.
  timeout --kill-after=10 "$((seconds + 60))" \
    "build-fuzz/fuzz/$target" -max_total_time="$seconds" -runs="$runs" -seed="$seed" -timeout=10 -timeout_exitcode=70 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/crashes/$target-" \
    "build-fuzz/corpus/$target" "fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
  case "$status" in
    0) ;;
    70 | 124 | 137)
      echo "warning: $target stopped on a slow input (exit $status), not counted as a failure; see $log" >&2
      timeouts="$timeouts $target" ;;
    *)
      tail -n 60 "$log" >&2
      echo "$target failed (exit $status): the input is in build-fuzz/crashes/, the whole log in $log" >&2
      exit 1 ;;
  esac
done
if [ -n "$timeouts" ]; then echo "slow inputs (warnings only):$timeouts" >&2; fi
