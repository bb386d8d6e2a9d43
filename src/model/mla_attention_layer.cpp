#include "model/mla_attention_layer.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/latent_attention.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "model/attending_runs.h"
#include "model/safetensors.h"

namespace moe {

std::vector<float> mla_inv_freq(const ModelConfig& config) {
  const int rope = config.mla->qk_rope_head_dim;
  if (!config.yarn) return RotaryEmbedding(rope, rope, config.rope_theta).inv_freq();
  return yarn_inv_freq(rope, config.rope_theta, *config.yarn);
}

float mla_rotary_scale(const ModelConfig& config) {
  return config.yarn ? static_cast<float>(yarn_attention_factor(*config.yarn)) : 1.0f;
}

float mla_softmax_scale(const ModelConfig& config) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(config.mla->qk_head_dim()));
  return static_cast<float>(config.yarn ? scale * yarn_softmax_scale_factor(*config.yarn) : scale);
}

MlaAttentionLayer::MlaAttentionLayer(const Checkpoint& ckpt, const ModelConfig& config, const MlaTensorNames& names,
                                     int kv_layer, const TensorShard& shard)
    : kv_layer_(kv_layer),
      num_heads_(static_cast<int>(shard.query_heads(config.num_attention_heads).count)),
      dims_(*config.mla),
      norm_eps_(static_cast<float>(config.rms_norm_eps)),
      softmax_scale_(mla_softmax_scale(config)),
      rotary_(mla_inv_freq(config), mla_rotary_scale(config), config.mla->rope_interleave) {
  const int64_t H = config.hidden_size, heads = config.num_attention_heads;
  // A tensor-parallel rank's heads: their rows of q (or q_b) and kv_b, their columns of o. The latent
  // (q_a, kv_a and their norms) is whole on every rank, and so is each rank's latent KV cache.
  const IndexRange mine = shard.query_heads(config.num_attention_heads), all_hidden{0, H};
  auto head_rows = [&](int64_t per_head) { return IndexRange{mine.begin * per_head, mine.count * per_head}; };
  const int64_t qk = dims_.qk_head_dim(), kv_b_per_head = dims_.qk_nope_head_dim + dims_.v_head_dim;
  if (names.q_weight.empty()) {
    q_a_ = ckpt.projection(names.q_a_weight, dims_.q_lora_rank, H);
    q_a_norm_ = ckpt.vector(names.q_a_norm, dims_.q_lora_rank);
    q_b_ = ckpt.projection_block(names.q_b_weight, heads * qk, dims_.q_lora_rank, head_rows(qk),
                                 IndexRange{0, dims_.q_lora_rank});
  } else {
    q_ = ckpt.projection_block(names.q_weight, heads * qk, H, head_rows(qk), all_hidden);
  }
  kv_a_ = ckpt.projection(names.kv_a_weight, dims_.kv_lora_rank + dims_.qk_rope_head_dim, H);
  kv_a_norm_ = ckpt.vector(names.kv_a_norm, dims_.kv_lora_rank);
  kv_b_ = ckpt.projection_block(names.kv_b_weight, heads * kv_b_per_head, dims_.kv_lora_rank, head_rows(kv_b_per_head),
                                IndexRange{0, dims_.kv_lora_rank});
  o_ = ckpt.projection_block(names.o_weight, H, heads * dims_.v_head_dim, all_hidden, head_rows(dims_.v_head_dim));
}

void MlaAttentionLayer::project_queries(const float* x, int64_t num_tokens, float* q) const {
  if (q_a_.rows == 0) {
    linear(x, num_tokens, q_, q);
    return;
  }
  thread_local std::vector<float> q_latent;
  q_latent.resize(static_cast<size_t>(num_tokens * dims_.q_lora_rank));
  linear(x, num_tokens, q_a_, q_latent.data());
  rms_norm(q_latent.data(), num_tokens, dims_.q_lora_rank, dims_.q_lora_rank, q_a_norm_.data(), norm_eps_,
           q_latent.data());
  linear(q_latent.data(), num_tokens, q_b_, q);
}

void MlaAttentionLayer::forward(const float* x, const ForwardBatch& batch, KvCache& kv, float* out) const {
  const int64_t T = batch.num_tokens();
  const int64_t latent = dims_.kv_lora_rank, rope = dims_.qk_rope_head_dim, row = latent + rope;
  const int64_t qk = dims_.qk_head_dim(), q_width = num_heads_ * qk;
  const int64_t expanded_width = num_heads_ * (dims_.qk_nope_head_dim + dims_.v_head_dim);
  // Kept per thread from call to call, as the model's other activations.
  thread_local std::vector<float> q, compressed, attn, visible_latents, visible_rope_keys, expanded;
  q.resize(static_cast<size_t>(T * q_width));
  compressed.resize(static_cast<size_t>(T * row));
  attn.resize(static_cast<size_t>(T * num_heads_ * dims_.v_head_dim));
  project_queries(x, T, q.data());
  linear(x, T, kv_a_, compressed.data());
  rms_norm(compressed.data(), T, latent, row, kv_a_norm_.data(), norm_eps_, compressed.data());
  // Rotate and store every new token's row at its slot before any token attends.
  int64_t t = 0;
  for (const BatchSequence& seq : batch.sequences)
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t) {
      const int32_t pos = batch.positions[t];
      rotary_.apply(q.data() + t * q_width + dims_.qk_nope_head_dim, num_heads_, qk, pos);
      rotary_.apply(compressed.data() + t * row + latent, 1, rope, pos);
      std::memcpy(kv.row(kv_layer_, seq.new_token_slot(i)), compressed.data() + t * row, row * sizeof(float));
    }
  const LatentHeadDims dims{num_heads_, dims_.qk_nope_head_dim, dims_.qk_rope_head_dim, dims_.v_head_dim};
  const AttendingRuns runs(batch);
  for (const AttendingRun& run : runs.runs()) {
    // Every visible position's latent expanded into its heads' k_nope and value.
    const int64_t visible = run.first_position + run.num_new;
    visible_latents.resize(static_cast<size_t>(visible * latent));
    visible_rope_keys.resize(static_cast<size_t>(visible * rope));
    expanded.resize(static_cast<size_t>(visible * expanded_width));
    for (int64_t p = 0; p < visible; ++p) {
      const float* stored = kv.row(kv_layer_, run.slots[p]);
      std::memcpy(visible_latents.data() + p * latent, stored, latent * sizeof(float));
      std::memcpy(visible_rope_keys.data() + p * rope, stored + latent, rope * sizeof(float));
    }
    linear(visible_latents.data(), visible, kv_b_, expanded.data());
    latent_causal_attention(q.data() + run.first_token * q_width, run.num_new, run.first_position, expanded.data(),
                            visible_rope_keys.data(), dims, softmax_scale_,
                            attn.data() + run.first_token * num_heads_ * dims_.v_head_dim);
  }
  linear(attn.data(), T, o_, out);
}

}  // namespace moe
