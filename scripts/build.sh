#!/usr/bin/env bash
# Configures (Release, Ninja) and builds into ./build: everything, or only the targets named
# (scripts/build.sh moe-serve builds the server and what it links).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
if [ $# -gt 0 ]; then
  cmake --build build -j "$(nproc)" --target "$@"
else
  cmake --build build -j "$(nproc)"
fi
