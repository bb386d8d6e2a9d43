#pragma once
// The kernels of multi-head latent attention on the device (mla_attention.cu), in the absorbed form:
// each head's q_nope is folded into kv_b's key rows, so the heads attend over the stored latents as
// they are (one shared key row per token, as MQA), and the latent-weighted sum goes out through
// kv_b's value rows. Float32 throughout; the CPU expands the latents instead (mla_attention_layer.h),
// the same sums in another order.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels.h"

namespace moe::cuda {

// The sizes of one layer's latent attention (MlaConfig's, and the layer's heads).
struct LatentShape {
  int num_heads;
  int latent;  // kv_lora_rank
  int nope;    // qk_nope_head_dim
  int rope;    // qk_rope_head_dim
  int v;       // v_head_dim
  int64_t row_size() const { return int64_t{latent} + rope; }  // a token's cache row: latent, then rotary key
};

// The rotary part of the heads and of the shared key, as kernels/rotary.h computes it: pair
// (i, i + rope/2) of the rotate-half layout (interleaved: the adjacent pair (2i, 2i + 1), moved into
// that layout first) by position · inv_freq[i], cos and sin times `scale`.
struct LatentRotary {
  const float* inv_freq;  // [rope / 2]
  float scale;
  bool interleaved;
};

// compressed [T, latent + rope] (kv_a's output): each token's latent RMS-normed by `norm`, its key
// rotated, the row stored at its slot of `rows` ([slot, latent + rope]); q [T, heads, nope + rope]:
// each head's rope part rotated in place.
void latent_rotate_store(float* q, const float* compressed, int64_t tokens, const LatentShape& shape,
                         const float* norm, float eps, const int32_t* positions, const LatentRotary& rotary,
                         const int32_t* slots, float* rows, cudaStream_t stream);

// q_latent[t, h, :] = kv_b's key rows of head h (rows h·(nope + v) .. + nope)ᵀ · q[t, h, :nope].
void absorb_queries(const float* q, int64_t tokens, const LatentShape& shape, const WeightRef& kv_b, float* q_latent,
                    cudaStream_t stream);

// For every new token and head: scores scale · (q_latent · latent[p] + q_rope · key[p]) over its visible
// positions (as `tables` give them: causal, or a draft tree's), softmax, and the weighted sum of the
// latents into out_latent [T, heads, latent].
void latent_attention(const float* q_latent, const float* q, int64_t tokens, const AttentionTables& tables,
                      const float* rows, const LatentShape& shape, float scale, float* out_latent, cudaStream_t stream);

// out[t, h, :v] = kv_b's value rows of head h (rows h·(nope + v) + nope .. + v) · out_latent[t, h, :].
void expand_values(const float* out_latent, int64_t tokens, const LatentShape& shape, const WeightRef& kv_b, float* out,
                   cudaStream_t stream);

}  // namespace moe::cuda
