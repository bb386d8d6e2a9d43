#include "model/architectures/llama_eagle3.h"

#include "model/architectures/llama_style.h"

namespace moe {

Eagle3Plan eagle3_plan() {
  const std::string layer = "midlayer.";
  Eagle3Plan plan;
  plan.fc = "fc.weight";
  plan.embedding = "embed_tokens.weight";
  plan.input_norm = layer + "input_layernorm.weight";
  plan.hidden_norm = layer + "hidden_norm.weight";
  plan.attention = llama_style::attention_names(ModelConfig{}, layer);  // Llama: no bias, no q/k norm
  plan.post_attention_norm = layer + "post_attention_layernorm.weight";
  plan.mlp = llama_style::mlp_names(layer + "mlp.");
  plan.norm = "norm.weight";
  plan.lm_head = "lm_head.weight";
  plan.d2t = "d2t";
  plan.t2d = "t2d";
  return plan;
}

}  // namespace moe
