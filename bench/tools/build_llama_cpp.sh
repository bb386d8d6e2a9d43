#!/usr/bin/env bash
# Builds llama.cpp (CPU only, Release) OUTSIDE this repository, for the side-by-side
# comparisons in bench/RESULTS.md. llama.cpp is never a dependency of moe-engine.
#
# Source: the git bundle shipped inside the npm package node-llama-cpp (the npm
# registry is reachable where GitHub is not).
#
#   bench/tools/build_llama_cpp.sh /work/llama.cpp      # -> /work/llama.cpp/{src,build}
#
# Leaves: <out>/src (git checkout, also holds gguf-py for bench/tools/gguf_from_checkpoint.py)
#         <out>/build/bin/{llama-server,llama-bench,llama-quantize,llama-perplexity,llama-tokenize}
# Env: NODE_LLAMA_CPP_VERSION (default 3.22.1), JOBS (default 2), NICE (default 15), TARGETS (default
#      the five above; llama-server takes the longest to build).
set -euo pipefail
out=${1:?usage: build_llama_cpp.sh OUTPUT_DIR (outside the repository)}
version=${NODE_LLAMA_CPP_VERSION:-3.22.1}
jobs=${JOBS:-2}
repo_root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
mkdir -p "$out"
out=$(cd "$out" && pwd)
case "$out/" in "$repo_root"/*) echo "output dir must be outside the repository" >&2; exit 1;; esac

if [ ! -d "$out/src/.git" ]; then
  mkdir -p "$out/npm"
  (cd "$out/npm" && npm pack "node-llama-cpp@$version" >/dev/null && tar xzf "node-llama-cpp-$version.tgz")
  git clone -q "$out/npm/package/llama/gitRelease.bundle" "$out/src"
  cat "$out/npm/package/llama/llama.cpp.info.json"
fi
git -C "$out/src" log -1 --format='llama.cpp source: %H %s'

cmake -S "$out/src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DGGML_CCACHE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON
targets=${TARGETS:-llama-server llama-bench llama-quantize llama-perplexity llama-tokenize}
# shellcheck disable=SC2086  # the targets are words
nice -n "${NICE:-15}" cmake --build "$out/build" -j"$jobs" --target $targets
for target in $targets; do ls -l "$out/build/bin/$target"; done
