// GLM-4.5 (Glm4MoeForCausalLM): GQA with q/k/v bias, optional per-head q/k RMSNorm and rotary on
// part of each head; DeepSeek-V3's MoE layers (deepseek_style.h) after the first dense ones, and its
// next-token-prediction module.
#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/architectures/deepseek_style.h"
#include "model/architectures/llama_style.h"

namespace moe {
namespace {

class Glm4Moe final : public Architecture {
 public:
  const char* name() const override { return "Glm4MoeForCausalLM"; }

  void read_config(const nlohmann::json& config, ModelConfig& out) const override {
    out.attention_bias = config.value("attention_bias", false);
    out.qk_norm = config.value("use_qk_norm", false);
    deepseek_style::read_moe_config(config, out);
  }

  ModelPlan plan(const ModelConfig& config) const override {
    const auto moe_names = [&](const std::string& layer_prefix) {
      return deepseek_style::moe_names(config, layer_prefix);
    };
    ModelPlan plan = llama_style::decoder_plan(config, moe_names);
    plan.nextn = deepseek_style::nextn_plan(
        config, [&](int layer) { return llama_style::decoder_layer_plan(config, layer, moe_names); });
    return plan;
  }
};

}  // namespace

const Architecture& glm4_moe_architecture() {
  static const Glm4Moe arch;
  return arch;
}

}  // namespace moe
