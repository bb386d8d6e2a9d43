#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace moe {

void causal_attention(const float* q, int64_t num_new, int64_t first_position, const int32_t* kv_slots,
                      const float* keys, const float* values, int64_t kv_stride, const AttentionShape& shape,
                      float* out) {
  const int hd = shape.head_dim;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int64_t q_stride = static_cast<int64_t>(shape.num_heads) * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  thread_local std::vector<float> scores;
  scores.resize(static_cast<size_t>(first_position + num_new));
  for (int64_t i = 0; i < num_new; ++i) {
    const int64_t visible = first_position + i + 1;
    for (int h = 0; h < shape.num_heads; ++h) {
      const float* qh = q + i * q_stride + static_cast<int64_t>(h) * hd;
      const int64_t kv_offset = static_cast<int64_t>(h / group) * hd;
      float max_score = -INFINITY;
      for (int64_t p = 0; p < visible; ++p) {
        const float* k = keys + kv_slots[p] * kv_stride + kv_offset;
        float dot = 0.0f;
        for (int d = 0; d < hd; ++d) dot += qh[d] * k[d];
        scores[p] = dot * scale;
        max_score = std::max(max_score, scores[p]);
      }
      float total = 0.0f;
      for (int64_t p = 0; p < visible; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        total += scores[p];
      }
      float* oh = out + i * q_stride + static_cast<int64_t>(h) * hd;
      std::fill(oh, oh + hd, 0.0f);
      for (int64_t p = 0; p < visible; ++p) {
        const float* v = values + kv_slots[p] * kv_stride + kv_offset;
        const float w = scores[p] / total;
        for (int d = 0; d < hd; ++d) oh[d] += w * v[d];
      }
    }
  }
}

}  // namespace moe
