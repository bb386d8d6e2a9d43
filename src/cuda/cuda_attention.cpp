#include "cuda/cuda_attention.h"

#include "cuda/kernels.h"
#include "kernels/rotary.h"

namespace moe::cuda {

CudaAttention::CudaAttention(const Checkpoint& ckpt, const ModelConfig& config, int layer)
    : layer_(layer),
      num_heads_(config.num_attention_heads),
      num_kv_heads_(config.num_key_value_heads),
      head_dim_(config.head_dim),
      norm_eps_(static_cast<float>(config.rms_norm_eps)),
      inv_freq_(DeviceArray<float>::from_host(RotaryEmbedding(config.head_dim, config.rope_theta).inv_freq())),
      w_(AttentionWeights<DeviceMatrix, DeviceArray<float>>::load(
          config, layer,
          [&](const std::string& name, int64_t rows, int64_t cols) { return upload_matrix(ckpt, name, rows, cols); },
          [&](const std::string& name, int64_t n) { return upload_vector(ckpt, name, n); })) {}

void CudaAttention::forward(const float* x, const StepContext& step, DeviceKvPool& kv, Scratch& scratch,
                            float* out) const {
  const int64_t T = step.batch.num_tokens();
  const int64_t q_width = w_.q_proj.rows, kv_width = w_.k_proj.rows;
  float* q = scratch.q.reserve(static_cast<size_t>(T * q_width));
  float* k = scratch.k.reserve(static_cast<size_t>(T * kv_width));
  float* v = scratch.v.reserve(static_cast<size_t>(T * kv_width));
  float* attn = scratch.attn.reserve(static_cast<size_t>(T * q_width));
  step.blas.linear(x, T, w_.q_proj, q);
  step.blas.linear(x, T, w_.k_proj, k);
  step.blas.linear(x, T, w_.v_proj, v);
  if (!w_.q_bias.empty()) {
    add_bias(q, w_.q_bias.data(), T, q_width, step.stream);
    add_bias(k, w_.k_bias.data(), T, kv_width, step.stream);
    add_bias(v, w_.v_bias.data(), T, kv_width, step.stream);
  }
  if (!w_.q_norm.empty()) {
    rms_norm(q, T * num_heads_, head_dim_, w_.q_norm.data(), norm_eps_, q, step.stream);
    rms_norm(k, T * num_kv_heads_, head_dim_, w_.k_norm.data(), norm_eps_, k, step.stream);
  }
  rotary(q, step.batch.positions(), T, num_heads_, head_dim_, inv_freq_.data(), step.stream);
  rotary(k, step.batch.positions(), T, num_kv_heads_, head_dim_, inv_freq_.data(), step.stream);
  // Every new token's K/V are stored before any token attends (a prefill chunk sees its own).
  store_kv(k, v, step.batch.own_slots(), T, kv_width, kv.keys_of(layer_), kv.values_of(layer_), step.stream);
  causal_attention(q, T, step.batch.attention_tables(), kv.keys_of(layer_), kv.values_of(layer_), num_heads_,
                   num_kv_heads_, head_dim_, attn, step.stream);
  step.blas.linear(attn, T, w_.o_proj, out);
}

}  // namespace moe::cuda
