#include "model/architectures/llama_style.h"

namespace moe::llama_style {

AttentionTensorNames attention_names(const ModelConfig& config, const std::string& layer_prefix) {
  const std::string p = layer_prefix + "self_attn.";
  AttentionTensorNames names;
  names.q_weight = p + "q_proj.weight";
  names.k_weight = p + "k_proj.weight";
  names.v_weight = p + "v_proj.weight";
  names.o_weight = p + "o_proj.weight";
  if (config.attention_bias) {
    names.q_bias = p + "q_proj.bias";
    names.k_bias = p + "k_proj.bias";
    names.v_bias = p + "v_proj.bias";
  }
  if (config.qk_norm) {
    names.q_norm = p + "q_norm.weight";
    names.k_norm = p + "k_norm.weight";
  }
  return names;
}

std::string layer_prefix(int layer) { return "model.layers." + std::to_string(layer) + "."; }

MlpTensorNames mlp_names(const std::string& prefix) {
  return {prefix + "gate_proj.weight", prefix + "up_proj.weight", prefix + "down_proj.weight"};
}

MoeTensorNames mlp_moe_names(const std::string& layer_prefix, int num_experts) {
  const std::string p = layer_prefix + "mlp.";
  MoeTensorNames names;
  names.router = p + "gate.weight";
  for (int e = 0; e < num_experts; ++e) names.experts.push_back(mlp_names(p + "experts." + std::to_string(e) + "."));
  return names;
}

LayerPlan decoder_layer_plan(const ModelConfig& config, int layer_index,
                             const std::function<MoeTensorNames(const std::string& layer_prefix)>& moe_names) {
  const std::string p = layer_prefix(layer_index);
  LayerPlan layer;
  layer.input_norm = p + "input_layernorm.weight";
  layer.post_attention_norm = p + "post_attention_layernorm.weight";
  layer.attention = AttentionKind::Gqa;
  layer.gqa = attention_names(config, p);
  if (config.moe_index(layer_index) >= 0) {
    layer.ffn = FfnKind::Moe;
    layer.moe = moe_names(p);
  } else {
    layer.ffn = FfnKind::Dense;
    layer.mlp = mlp_names(p + "mlp.");
  }
  return layer;
}

ModelPlan decoder_plan(const ModelConfig& config,
                       const std::function<MoeTensorNames(const std::string& layer_prefix)>& moe_names) {
  ModelPlan plan;
  plan.embedding = "model.embed_tokens.weight";
  plan.final_norm = "model.norm.weight";
  if (!config.tie_word_embeddings) plan.lm_head = "lm_head.weight";
  for (int l = 0; l < config.num_hidden_layers; ++l) plan.layers.push_back(decoder_layer_plan(config, l, moe_names));
  return plan;
}

}  // namespace moe::llama_style
