// Mixtral: every layer is MoE, top-k always renormalised; the Llama-style decoder's names with a
// MoE block of its own naming, its experts' gate/up/down named w1/w3/w2.
#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/architectures/llama_style.h"

namespace moe {
namespace {

class Mixtral final : public Architecture {
 public:
  const char* name() const override { return "MixtralForCausalLM"; }

  void read_config(const nlohmann::json&, ModelConfig& out) const override {
    out.norm_topk_prob = true;
    out.moe_layer_ids.clear();
    for (int l = 0; l < out.num_hidden_layers; ++l) out.moe_layer_ids.push_back(l);
  }

  ModelPlan plan(const ModelConfig& config) const override {
    return llama_style::decoder_plan(config, [&](const std::string& layer_prefix) {
      const std::string p = layer_prefix + "block_sparse_moe.";
      MoeTensorNames names;
      names.router = p + "gate.weight";
      for (int e = 0; e < config.num_experts; ++e) {
        const std::string expert = p + "experts." + std::to_string(e) + ".";
        names.experts.push_back({expert + "w1.weight", expert + "w3.weight", expert + "w2.weight"});
      }
      return names;
    });
  }
};

}  // namespace

const Architecture& mixtral_architecture() {
  static const Mixtral arch;
  return arch;
}

}  // namespace moe
