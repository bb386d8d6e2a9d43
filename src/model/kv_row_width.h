#pragma once
// How many floats one token occupies in a layer's KV cache row: a GQA layer keeps its key and value
// (2 · num_key_value_heads · head_dim), an MLA layer its normalised latent and its rotated key, shared
// by every head (kv_lora_rank + qk_rope_head_dim).
#include <cstdint>
#include <vector>

#include "model/layer_range.h"
#include "model/model_config.h"
#include "model/model_plan.h"

namespace moe {

int64_t kv_row_floats(const ModelConfig& config, AttentionKind kind);

// The row width of each of `layers`, by the architecture's plan.
std::vector<int64_t> kv_row_floats(const ModelConfig& config, LayerRange layers);

// The KV cache bytes of one token over every layer, in elements of `element_bytes` (float32 unless
// told: model.h's kv_cache_element_bytes).
int64_t kv_bytes_per_token(const ModelConfig& config, int element_bytes = 4);

// What a NEXTN draft keeps per token slot beside the model's rows (worker/hidden_state_drafter.h): its own
// layer's KV row and the target's final hidden state, both float32; 0 for a config without the module.
int64_t nextn_bytes_per_token(const ModelConfig& config);

// What an EAGLE-3 head of decoder layer `head_layer` (model/eagle3_config.h) keeps per token slot: its
// layer's KV row and the hidden state it reads, both float32.
int64_t eagle3_bytes_per_token(const ModelConfig& head_layer);

}  // namespace moe
