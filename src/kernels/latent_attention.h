#pragma once
// The attention step of multi-head latent attention (DeepSeek-V2/V3), once the visible positions'
// latents are expanded into each head's k_nope and value: a head's score for position p is
// scale · (q_nope · k_nope[p] + q_rope · k_rope[p]), the rotary key k_rope being shared by all heads;
// softmax in float32, then the weighted sum of the head's values.
#include <cstdint>

namespace moe {

struct LatentHeadDims {
  int num_heads = 0;
  int nope = 0;  // qk_nope_head_dim
  int rope = 0;  // qk_rope_head_dim
  int v = 0;     // v_head_dim
};

// One run of new tokens: token i sits at position first_position + i and sees positions
// 0..first_position + i. q: [num_new, heads, nope + rope]; kv: [visible, heads, nope + v], each head's
// k_nope then value, by position; rope_keys: [visible, rope]; out: [num_new, heads, v].
void latent_causal_attention(const float* q, int64_t num_new, int64_t first_position, const float* kv,
                             const float* rope_keys, const LatentHeadDims& dims, float scale, float* out);

}  // namespace moe
