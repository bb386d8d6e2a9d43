#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, AddressSanitizer + UndefinedBehaviorSanitizer) into
# ./build-fuzz and runs each for FUZZ_SECONDS seconds (default 20) from its seed corpus in
# fuzz/corpus/<target>/ (new inputs go to build-fuzz/corpus/, the repository's seeds stay as they are).
# Fails on the first crash, sanitizer report, timeout (10 s for one input) or out-of-memory; the input
# that did it is left in build-fuzz/crashes/. FUZZ_TARGETS="fuzz_jinja ..." runs only those.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --fuzz
seconds="${FUZZ_SECONDS:-20}"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DMOE_FUZZ=ON \
  -DMOE_BUILD_TESTS=OFF -DMOE_BUILD_BENCH=OFF -DMOE_BUILD_TOOLS=OFF -DMOE_CUDA=OFF >/dev/null
cmake --build build-fuzz --target fuzz_all -j "$(nproc)"
targets="${FUZZ_TARGETS:-$(cd fuzz && ls fuzz_*.cpp | sed 's/\.cpp$//')}"
mkdir -p build-fuzz/crashes
for target in $targets; do
  mkdir -p "build-fuzz/corpus/$target"
  echo "== $target ($seconds s)"
  log="build-fuzz/$target.log"
  status=0
  "build-fuzz/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$target-" "build-fuzz/corpus/$target" "fuzz/corpus/$target" >"$log" 2>&1 ||
    status=$?
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
  if [ "$status" != 0 ]; then
    tail -n 60 "$log" >&2
    echo "$target failed (exit $status): the input is in build-fuzz/crashes/, the whole log in $log" >&2
    exit 1
  fi
done
