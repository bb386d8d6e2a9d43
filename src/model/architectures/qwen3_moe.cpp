// Qwen3-MoE (Qwen3-30B-A3B and family): q/k RMSNorm per head, no qkv bias, norm_topk_prob per config;
// the Llama-style decoder's names with the MoE block under "mlp.".
#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/architectures/llama_style.h"

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

  ModelPlan plan(const ModelConfig& config) const override {
    return llama_style::decoder_plan(config, [&](const std::string& layer_prefix) {
      return llama_style::mlp_moe_names(layer_prefix, config.num_experts);
    });
  }
};

}  // namespace

const Architecture& qwen3_moe_architecture() {
  static const Qwen3Moe arch;
  return arch;
}

}  // namespace moe
