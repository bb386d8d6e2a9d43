// Qwen2-MoE: qkv bias, a shared expert beside the routed ones, scaled by a sigmoid gate; the
// Llama-style decoder's names with the MoE block under "mlp." and the shared expert beside it.
#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/architectures/llama_style.h"

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

  ModelPlan plan(const ModelConfig& config) const override {
    return llama_style::decoder_plan(config, [&](const std::string& layer_prefix) {
      MoeTensorNames names = llama_style::mlp_moe_names(layer_prefix, config.num_experts);
      if (config.shared_expert_intermediate_size > 0) {
        names.shared_expert = llama_style::mlp_names(layer_prefix + "mlp.shared_expert.");
        names.shared_gate = layer_prefix + "mlp.shared_expert_gate.weight";
      }
      return names;
    });
  }
};

}  // namespace

const Architecture& qwen2_moe_architecture() {
  static const Qwen2Moe arch;
  return arch;
}

}  // namespace moe
