#include "model/checkpoint_manifest.h"

#include "model/architecture.h"

namespace moe {

std::vector<TensorSpec> checkpoint_manifest(const ModelConfig& c) {
  using Init = TensorSpec::Init;
  const Architecture& arch = find_architecture(c.architecture);
  const int64_t H = c.hidden_size;
  const int64_t q_width = static_cast<int64_t>(c.num_attention_heads) * c.head_dim;
  const int64_t kv_width = static_cast<int64_t>(c.num_key_value_heads) * c.head_dim;
  std::vector<TensorSpec> specs;
  auto add = [&](std::string name, std::vector<int64_t> shape, Init init) {
    specs.push_back({std::move(name), std::move(shape), init});
  };
  auto add_mlp = [&](const std::string& prefix, const std::string& gate, const std::string& up,
                     const std::string& down, int64_t width) {
    add(prefix + gate + ".weight", {width, H}, Init::Projection);
    add(prefix + up + ".weight", {width, H}, Init::Projection);
    add(prefix + down + ".weight", {H, width}, Init::Projection);
  };
  add("model.embed_tokens.weight", {c.vocab_size, H}, Init::Embedding);
  add("model.norm.weight", {H}, Init::NormScale);
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, H}, Init::Router);
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {H}, Init::NormScale);
    add(p + "post_attention_layernorm.weight", {H}, Init::NormScale);
    add(p + "self_attn.q_proj.weight", {q_width, H}, Init::Projection);
    add(p + "self_attn.k_proj.weight", {kv_width, H}, Init::Projection);
    add(p + "self_attn.v_proj.weight", {kv_width, H}, Init::Projection);
    add(p + "self_attn.o_proj.weight", {H, q_width}, Init::Projection);
    if (c.attention_bias) {
      add(p + "self_attn.q_proj.bias", {q_width}, Init::Bias);
      add(p + "self_attn.k_proj.bias", {kv_width}, Init::Bias);
      add(p + "self_attn.v_proj.bias", {kv_width}, Init::Bias);
    }
    if (c.qk_norm) {
      add(p + "self_attn.q_norm.weight", {c.head_dim}, Init::NormScale);
      add(p + "self_attn.k_norm.weight", {c.head_dim}, Init::NormScale);
    }
    if (c.moe_index(l) < 0) {
      add_mlp(p + "mlp.", "gate_proj", "up_proj", "down_proj", c.intermediate_size);
      continue;
    }
    const MoeTensorNames n = arch.moe_tensor_names(l);
    add(n.router, {c.num_experts, H}, Init::Router);
    for (int e = 0; e < c.num_experts; ++e)
      add_mlp(n.expert_prefix + std::to_string(e) + ".", n.gate, n.up, n.down, c.moe_intermediate_size);
    if (!n.shared_expert_prefix.empty() && c.shared_expert_intermediate_size > 0) {
      add_mlp(n.shared_expert_prefix, "gate_proj", "up_proj", "down_proj", c.shared_expert_intermediate_size);
      add(n.shared_expert_gate, {1, H}, Init::Projection);
    }
  }
  return specs;
}

}  // namespace moe
