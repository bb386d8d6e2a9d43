#!/usr/bin/env bash
# Builds the test suites with sanitizers (GCC) into a build directory of their own and runs them with
# CTest: every finding stops the test that made it, so the run fails.
#   scripts/sanitize.sh address,undefined     # AddressSanitizer + UndefinedBehaviorSanitizer: build-asan
#   scripts/sanitize.sh thread                # ThreadSanitizer: build-tsan
# Further arguments go to ctest (e.g. -R 'api_tests|transport_tests'). The programs (and so the
# end-to-end tests that start moe-serve) and the benchmarks are left out: the GoogleTest suites
# cover the same code in-process, where a sanitizer sees it.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers="${1:?usage: scripts/sanitize.sh address,undefined|thread [ctest arguments]}"
shift
case "$sanitizers" in
  thread) dir=build-tsan ;;
  *) dir=build-asan ;;
esac
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOE_SANITIZE="$sanitizers" \
  -DMOE_BUILD_TOOLS=OFF -DMOE_BUILD_BENCH=OFF -DMOE_CUDA=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)"
# Leaks are findings too; a halt on the first UBSan report keeps its stack in the test's output.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
cd "$dir"
ctest --output-on-failure -j "$(nproc)" "$@"
