#!/usr/bin/env bash
# Builds the test suites with sanitizers (GCC) into a build directory of their own and runs them with
# CTest: every finding stops the test that made it, so the run fails.
#   scripts/sanitize.sh address,undefined     # AddressSanitizer + UndefinedBehaviorSanitizer: build-asan
#   scripts/sanitize.sh thread                # ThreadSanitizer: build-tsan
# Further arguments go to ctest (e.g. -R 'api_tests|transport_tests'). The benchmarks are left out,
# and so are the programs and the end-to-end tests that start moe-serve unless SANITIZE_E2E=1:
#   SANITIZE_E2E=1 scripts/sanitize.sh address,undefined -R 'e2e_zmq|e2e_http_(curl|requests|errors)'
# builds moe-serve with the sanitizers too, and every process a test starts inherits the options below.
# On a machine whose libraries came from scripts/gpu_deps.sh --install, its MOE_DEPS_CMAKE_FLAGS are used.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers="${1:?usage: scripts/sanitize.sh address,undefined|thread [ctest arguments]}"
shift
case "$sanitizers" in
  thread) dir=build-tsan ;;
  *) dir=build-asan ;;
esac
programs=OFF
if [[ "${SANITIZE_E2E:-0}" == 1 ]]; then programs=ON; fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOE_SANITIZE="$sanitizers" \
  -DMOE_BUILD_TOOLS="$programs" -DMOE_BUILD_BENCH=OFF -DMOE_CUDA=OFF ${MOE_DEPS_CMAKE_FLAGS:-} >/dev/null
cmake --build "$dir" -j "$(nproc)"
# Leaks are findings too; a halt on the first UBSan report keeps its stack in the test's output.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# TSan's suppressions cover only libraries that are not built with it (see the file).
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp"
cd "$dir"
ctest --output-on-failure -j "$(nproc)" "$@"
