// DeepSeek-V3 (DeepseekV3ForCausalLM): multi-head latent attention in every layer (its names under
// "self_attn."), and the MoE layers DeepSeek-style (noaux_tc routing, shared experts, dense first
// layers) and its next-token-prediction module; the Llama-style names of the embedding and the norms.
#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/architectures/deepseek_style.h"
#include "model/architectures/llama_style.h"

namespace moe {
namespace {

MlaTensorNames mla_names(const MlaConfig& mla, const std::string& layer_prefix) {
  const std::string p = layer_prefix + "self_attn.";
  MlaTensorNames names;
  if (mla.q_lora_rank > 0) {
    names.q_a_weight = p + "q_a_proj.weight";
    names.q_a_norm = p + "q_a_layernorm.weight";
    names.q_b_weight = p + "q_b_proj.weight";
  } else {
    names.q_weight = p + "q_proj.weight";
  }
  names.kv_a_weight = p + "kv_a_proj_with_mqa.weight";
  names.kv_a_norm = p + "kv_a_layernorm.weight";
  names.kv_b_weight = p + "kv_b_proj.weight";
  names.o_weight = p + "o_proj.weight";
  return names;
}

class DeepseekV3 final : public Architecture {
 public:
  const char* name() const override { return "DeepseekV3ForCausalLM"; }

  void read_config(const nlohmann::json& config, ModelConfig& out) const override {
    MlaConfig mla;
    mla.q_lora_rank = config.value("q_lora_rank", nlohmann::json()).is_null() ? 0 : config["q_lora_rank"].get<int64_t>();
    mla.kv_lora_rank = config.at("kv_lora_rank").get<int64_t>();
    mla.qk_nope_head_dim = config.at("qk_nope_head_dim").get<int>();
    mla.qk_rope_head_dim = config.at("qk_rope_head_dim").get<int>();
    mla.v_head_dim = config.at("v_head_dim").get<int>();
    mla.rope_interleave = config.value("rope_interleave", true);
    out.mla = mla;
    deepseek_style::read_moe_config(config, out);
  }

  ModelPlan plan(const ModelConfig& config) const override {
    const auto moe_names = [&](const std::string& layer_prefix) {
      return deepseek_style::moe_names(config, layer_prefix);
    };
    const auto layer_plan = [&](int l) {
      LayerPlan layer = llama_style::decoder_layer_plan(config, l, moe_names);
      layer.attention = AttentionKind::Mla;
      layer.gqa = {};
      layer.mla = mla_names(*config.mla, llama_style::layer_prefix(l));
      return layer;
    };
    ModelPlan plan = llama_style::decoder_plan(config, moe_names);
    for (int l = 0; l < config.num_hidden_layers; ++l) plan.layers[l] = layer_plan(l);
    plan.nextn = deepseek_style::nextn_plan(config, layer_plan);
    return plan;
  }
};

}  // namespace

const Architecture& deepseek_v3_architecture() {
  static const DeepseekV3 arch;
  return arch;
}

}  // namespace moe
