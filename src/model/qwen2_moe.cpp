// Qwen2-MoE: qkv bias, a shared expert beside the routed ones, scaled by a sigmoid gate.
#include <nlohmann/json.hpp>

#include "model/architecture.h"

namespace moe {
namespace {

class Qwen2Moe final : public Architecture {
 public:
  const char* name() const override { return "Qwen2MoeForCausalLM"; }

  void read_config(const nlohmann::json& config, ModelConfig& out) const override {
    out.attention_bias = config.value("qkv_bias", true);
    out.norm_topk_prob = config.value("norm_topk_prob", false);
    out.shared_expert_intermediate_size = config.value("shared_expert_intermediate_size", int64_t{0});
    out.moe_layer_ids = sparse_step_moe_layers(config, out.num_hidden_layers);
  }

  MoeTensorNames moe_tensor_names(int layer) const override {
    const std::string mlp = "model.layers." + std::to_string(layer) + ".mlp.";
    return {mlp + "gate.weight", mlp + "experts.", "gate_proj", "up_proj", "down_proj",
            mlp + "shared_expert.", mlp + "shared_expert_gate.weight"};
  }
};

}  // namespace

const Architecture& qwen2_moe_architecture() {
  static const Qwen2Moe arch;
  return arch;
}

}  // namespace moe
