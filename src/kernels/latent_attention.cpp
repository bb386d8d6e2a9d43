#include "kernels/latent_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/thread_pool.h"

namespace moe {
namespace {

float dot(const float* a, const float* b, int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

void latent_causal_attention(const float* q, int64_t num_new, int64_t first_position, const float* kv,
                             const float* rope_keys, const LatentHeadDims& dims, float scale, float* out) {
  const int64_t qk = dims.nope + dims.rope, kv_head = dims.nope + dims.v;
  const int64_t kv_row = dims.num_heads * kv_head;
  const int64_t visible_max = first_position + num_new;
  // Each (token, head) pair is independent; a chunk covers at least a few thousand products.
  const int64_t min_chunk = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, visible_max * qk));
  parallel_for(num_new * dims.num_heads, min_chunk, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(visible_max));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / dims.num_heads, h = item % dims.num_heads;
      const int64_t visible = first_position + t + 1;
      const float* q_head = q + (t * dims.num_heads + h) * qk;
      float max_score = -INFINITY;
      for (int64_t p = 0; p < visible; ++p) {
        const float* k_nope = kv + p * kv_row + h * kv_head;
        const float s = (dot(q_head, k_nope, dims.nope) + dot(q_head + dims.nope, rope_keys + p * dims.rope, dims.rope)) * scale;
        scores[static_cast<size_t>(p)] = s;
        max_score = std::max(max_score, s);
      }
      float sum = 0.0f;
      for (int64_t p = 0; p < visible; ++p) sum += scores[p] = std::exp(scores[p] - max_score);
      float* o = out + (t * dims.num_heads + h) * dims.v;
      std::fill(o, o + dims.v, 0.0f);
      for (int64_t p = 0; p < visible; ++p) {
        const float w = scores[p] / sum;
        const float* value = kv + p * kv_row + h * kv_head + dims.nope;
        for (int d = 0; d < dims.v; ++d) o[d] += w * value[d];
      }
    }
  });
}

}  // namespace moe
