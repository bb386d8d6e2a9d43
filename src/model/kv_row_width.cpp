#include "model/kv_row_width.h"

#include "model/architecture.h"

namespace moe {

int64_t kv_row_floats(const ModelConfig& config, AttentionKind kind) {
  switch (kind) {
    case AttentionKind::Gqa: return int64_t{2} * config.num_key_value_heads * config.head_dim;
    case AttentionKind::Mla: return config.mla->kv_lora_rank + config.mla->qk_rope_head_dim;
  }
  return 0;
}

std::vector<int64_t> kv_row_floats(const ModelConfig& config, LayerRange layers) {
  const ModelPlan plan = model_plan(config);
  std::vector<int64_t> widths;
  for (int l = layers.begin; l < layers.end; ++l) widths.push_back(kv_row_floats(config, plan.layers[l].attention));
  return widths;
}

int64_t kv_bytes_per_token(const ModelConfig& config, int element_bytes) {
  int64_t elements = 0;
  for (int64_t width : kv_row_floats(config, LayerRange{0, config.num_hidden_layers})) elements += width;
  return elements * element_bytes;
}

int64_t nextn_bytes_per_token(const ModelConfig& config) {
  const std::optional<NextnPlan> nextn = model_plan(config).nextn;
  if (!nextn) return 0;
  return (kv_row_floats(config, nextn->layer.attention) + config.hidden_size) * int64_t{sizeof(float)};
}

int64_t eagle3_bytes_per_token(const ModelConfig& head_layer) {
  return (kv_row_floats(head_layer, AttentionKind::Gqa) + head_layer.hidden_size) * int64_t{sizeof(float)};
}

}  // namespace moe
