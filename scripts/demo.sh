#!/usr/bin/env bash
# The README's first command: install the packages the build needs, build moe-serve (and only what it
# links), serve the bundled code model (a small Qwen3-MoE trained on Python source by
# bench/tools/train_code_model.py, tokenizer in the same folder) with routed-experts capture on, complete
# a function over real HTTP (SGLang's /generate) and show the text and the routed experts of every
# position, decoded from base64 with numpy. scripts/test.sh builds and runs everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --build-only
scripts/build.sh moe-serve

MODEL=tests/data/code-moe
PORT="${MOE_DEMO_PORT:-30000}"
build/actors/moe-serve --model-path "$MODEL" --port "$PORT" --enable-return-routed-experts >build/demo-server.log 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || { cat build/demo-server.log; exit 1; }
  sleep 0.2
done

/usr/bin/python3 - "$MODEL" <<'PY'
import json, math, struct, sys
c = json.load(open(f"{sys.argv[1]}/config.json"))
with open(f"{sys.argv[1]}/model.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
params = sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
print(f"Serving {sys.argv[1]}: a {params / 1e6:.1f} M-parameter {c['architectures'][0]} ({c['num_hidden_layers']} "
      f"layers, {c['num_local_experts']} experts, top-{c['num_experts_per_tok']}) trained for a few minutes on Python "
      "source; what the demo shows is the experts its router chose for every token.")
PY
REQUEST='{"text": "def fibonacci(n):", "sampling_params": {"max_new_tokens": 24, "temperature": 0},
          "return_routed_experts": true}'
echo "POST http://127.0.0.1:$PORT/generate $REQUEST"
curl -sf "http://127.0.0.1:$PORT/generate" -H 'Content-Type: application/json' -d "$REQUEST" >build/demo-response.json
/usr/bin/python3 - build/demo-response.json <<'PY'
import base64, json, sys
import numpy as np

reply = json.load(open(sys.argv[1]))
meta = reply["meta_info"]
rows = np.frombuffer(base64.b64decode(meta["routed_experts"]), dtype=np.dtype(meta["routed_experts_dtype"]).newbyteorder("<"))
rows = rows.reshape(meta["routed_experts_shape"])
print("text:         ", repr(reply["text"]))
print("output_ids:   ", reply["output_ids"])
print("finish_reason:", meta["finish_reason"])
print(f"routed_experts: shape {list(rows.shape)} = [prompt {meta['prompt_tokens']} + generated "
      f"{meta['completion_tokens']} - 1 positions, {rows.shape[1]} MoE layers, top-{rows.shape[2]}]")
for position, layers in enumerate(rows):
    print(f"  position {position:2d}: " + "  ".join("[" + ",".join(f"{e:2d}" for e in layer) + "]" for layer in layers))
PY
echo "Next: a real checkpoint (docs/serving.md), the whole test suite (scripts/test.sh)."
