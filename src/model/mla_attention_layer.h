#pragma once
// One decoder layer's multi-head latent attention (DeepSeek-V3), as transformers computes it: q
// through its LoRA (q_a, RMSNorm, q_b) or a plain q_proj; kv_a gives a latent of kv_lora_rank floats
// (RMSNorm'd) and one rotary key shared by the heads; kv_b expands the latent into each head's k_nope
// and value; rotary on the rope parts only (interleaved pairs, YaRN frequencies per the config).
//
// The KV cache row of a token is its normalised latent then its rotated key (kv_lora_rank +
// qk_rope_head_dim floats), not per-head keys and values. Storing the latent after kv_a_layernorm
// spares normalising every visible token again at every step, and the norm is per token, so nothing
// is lost. At attention time the visible tokens' latents are expanded through kv_b again, each step:
// O(visible · kv_lora_rank · heads · (nope + v)) per sequence and layer, the price of exactness (the
// absorbed form, q_nope folded into kv_b, would read the latents as they are).
#include <vector>

#include "kernels/rotary.h"
#include "kernels/weight.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/model_plan.h"
#include "model/tensor_shard.h"

namespace moe {

class Checkpoint;

// The rotary part's frequencies (YaRN's where the config scales rope), the factor on its cos and sin,
// and the softmax scale (times YaRN's mscale² where mscale_all_dim is set): what the CPU's and the
// device's latent attention both rotate and scale by.
std::vector<float> mla_inv_freq(const ModelConfig& config);
float mla_rotary_scale(const ModelConfig& config);
float mla_softmax_scale(const ModelConfig& config);

class MlaAttentionLayer {
 public:
  // `kv_layer` is the layer's index in its KV cache (a pipeline stage's cache holds only its layers).
  // `shard`: the heads this tensor-parallel rank computes (all of them by default).
  MlaAttentionLayer(const Checkpoint& ckpt, const ModelConfig& config, const MlaTensorNames& names, int kv_layer,
                    const TensorShard& shard = {});
  // out[T, H] = attention(x[T, H]) for the whole batch (a tensor-parallel rank's partial sum over its
  // heads); writes this layer's row of every new token.
  void forward(const float* x, const ForwardBatch& batch, KvCache& kv, float* out) const;

 private:
  // q[T, heads · (nope + rope)] of x, rope parts not yet rotated.
  void project_queries(const float* x, int64_t num_tokens, float* q) const;

  int kv_layer_;
  int num_heads_;
  MlaConfig dims_;
  float norm_eps_;
  float softmax_scale_;
  RotaryEmbedding rotary_;
  WeightView q_, q_a_, q_b_, kv_a_, kv_b_, o_;
  VectorParam q_a_norm_, kv_a_norm_;
};

}  // namespace moe
