#!/usr/bin/env bash
# The README's test command: install packages, build, run the whole suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)"
