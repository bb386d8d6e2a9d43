#pragma once
// A checkpoint of a model's first decoder layers: its embedding, final norm and lm_head (and every
// other tensor outside model.layers.*) with layers [0, keep_layers), copied byte for byte. Run as a
// STANDALONE draft it is an early-exit (LayerSkip-style) self-speculative draft of the full model.
#include <cstdint>
#include <string>

namespace moe {

// Writes the truncated copy of `source_dir` (a checkpoint in the hub layout, float or GPTQ) into
// `out_dir`: config.json with num_hidden_layers = keep_layers (per-layer lists cut to match), the
// tensors in shards of at most shard_bytes, and the tokenizer files. keep_layers outside [1, the
// model's layers] or out_dir being source_dir is a moe::Error naming --keep-layers / --out.
void write_truncated_checkpoint(const std::string& source_dir, const std::string& out_dir, int keep_layers,
                                int64_t shard_bytes = int64_t{2} << 30);

}  // namespace moe
