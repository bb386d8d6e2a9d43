#!/usr/bin/env bash
# The README's main job: install packages, build, generate from the bundled tiny Qwen3-MoE model
# and print the output ids, their log-probabilities and the routed experts of every position.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
# "The capital of France is" in Qwen3's tokenizer.
build/src/moe-cli generate --model-path tests/data/qwen3-moe-tiny \
  --prompt-ids 785,6722,315,9625,374 --max-new-tokens 8 --return-routed-experts
