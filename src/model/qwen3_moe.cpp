// Qwen3-MoE (Qwen3-30B-A3B and family): q/k RMSNorm per head, no qkv bias, norm_topk_prob per config.
#include <nlohmann/json.hpp>

#include "model/architecture.h"

namespace moe {
namespace {

class Qwen3Moe final : public Architecture {
 public:
  const char* name() const override { return "Qwen3MoeForCausalLM"; }

  void read_config(const nlohmann::json& config, ModelConfig& out) const override {
    out.qk_norm = true;
    out.attention_bias = config.value("attention_bias", false);
    out.norm_topk_prob = config.value("norm_topk_prob", true);
    out.moe_layer_ids = sparse_step_moe_layers(config, out.num_hidden_layers);
  }

  MoeTensorNames moe_tensor_names(int layer) const override {
    const std::string mlp = "model.layers." + std::to_string(layer) + ".mlp.";
    return {mlp + "gate.weight", mlp + "experts.", "gate_proj", "up_proj", "down_proj", "", ""};
  }
};

}  // namespace

const Architecture& qwen3_moe_architecture() {
  static const Qwen3Moe arch;
  return arch;
}

}  // namespace moe
