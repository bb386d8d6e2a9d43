#include "model/attention_layer.h"

#include <cstring>
#include <vector>

#include "kernels/linear.h"
#include "kernels/norm.h"
#include "model/safetensors.h"

namespace moe {

AttentionLayer::AttentionLayer(const Checkpoint& ckpt, const ModelConfig& config, int layer)
    : layer_(layer),
      shape_{config.num_attention_heads, config.num_key_value_heads, config.head_dim},
      norm_eps_(static_cast<float>(config.rms_norm_eps)),
      rotary_(config.head_dim, config.rope_theta) {
  const std::string p = "model.layers." + std::to_string(layer) + ".self_attn.";
  const int64_t hidden = config.hidden_size;
  const int64_t q_width = static_cast<int64_t>(shape_.num_heads) * shape_.head_dim;
  const int64_t kv_width = static_cast<int64_t>(shape_.num_kv_heads) * shape_.head_dim;
  q_proj_ = ckpt.matrix(p + "q_proj.weight", q_width, hidden);
  k_proj_ = ckpt.matrix(p + "k_proj.weight", kv_width, hidden);
  v_proj_ = ckpt.matrix(p + "v_proj.weight", kv_width, hidden);
  o_proj_ = ckpt.matrix(p + "o_proj.weight", hidden, q_width);
  if (config.attention_bias) {
    q_bias_ = ckpt.vector(p + "q_proj.bias", q_width);
    k_bias_ = ckpt.vector(p + "k_proj.bias", kv_width);
    v_bias_ = ckpt.vector(p + "v_proj.bias", kv_width);
  }
  if (config.qk_norm) {
    q_norm_ = ckpt.vector(p + "q_norm.weight", shape_.head_dim);
    k_norm_ = ckpt.vector(p + "k_norm.weight", shape_.head_dim);
  }
}

void AttentionLayer::forward(const float* x, const ForwardBatch& batch, KvCache& kv, float* out) const {
  const int64_t T = batch.num_tokens();
  const int hd = shape_.head_dim;
  const int64_t q_width = q_proj_.rows, kv_width = k_proj_.rows;
  // Kept per thread from call to call, as the model's other activations (see CausalLm's scratch):
  // fresh zeroed vectors cost a memset (and, for a prefill, page faults) per layer.
  thread_local std::vector<float> q, k, v, attn;
  q.resize(static_cast<size_t>(T * q_width));
  k.resize(static_cast<size_t>(T * kv_width));
  v.resize(k.size());
  attn.resize(q.size());
  linear(x, T, q_proj_, q.data(), q_bias_.empty() ? nullptr : q_bias_.data());
  linear(x, T, k_proj_, k.data(), k_bias_.empty() ? nullptr : k_bias_.data());
  linear(x, T, v_proj_, v.data(), v_bias_.empty() ? nullptr : v_bias_.data());
  if (!q_norm_.empty()) {
    rms_norm(q.data(), T * shape_.num_heads, hd, hd, q_norm_.data(), norm_eps_, q.data());
    rms_norm(k.data(), T * shape_.num_kv_heads, hd, hd, k_norm_.data(), norm_eps_, k.data());
  }
  // Rotate and store every new token's key and value at its slot before any token attends.
  std::vector<AttentionSequence> sequences;
  int64_t t = 0;
  for (const BatchSequence& seq : batch.sequences) {
    if (seq.num_new_tokens == 0) continue;
    sequences.push_back({seq.num_new_tokens, batch.positions[t], seq.kv_slots.data()});
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t) {
      const int32_t pos = batch.positions[t];
      rotary_.apply(q.data() + t * q_width, shape_.num_heads, pos);
      rotary_.apply(k.data() + t * kv_width, shape_.num_kv_heads, pos);
      const int32_t slot = seq.kv_slots[pos];
      std::memcpy(kv.key(layer_, slot), k.data() + t * kv_width, kv_width * sizeof(float));
      std::memcpy(kv.value(layer_, slot), v.data() + t * kv_width, kv_width * sizeof(float));
    }
  }
  causal_attention(q.data(), sequences, kv.key(layer_, 0), kv.value(layer_, 0), kv.row_size(), shape_, attn.data());
  linear(attn.data(), T, o_proj_, out);
}

}  // namespace moe
