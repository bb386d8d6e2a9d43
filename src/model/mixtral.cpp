// Mixtral: every layer is MoE, experts named w1 (gate), w3 (up), w2 (down), top-k always renormalised.
#include <nlohmann/json.hpp>

#include "model/architecture.h"

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

  MoeTensorNames moe_tensor_names(int layer) const override {
    const std::string moe = "model.layers." + std::to_string(layer) + ".block_sparse_moe.";
    return {moe + "gate.weight", moe + "experts.", "w1", "w3", "w2", "", ""};
  }
};

}  // namespace

const Architecture& mixtral_architecture() {
  static const Mixtral arch;
  return arch;
}

}  // namespace moe
