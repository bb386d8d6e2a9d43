#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/simd.h"
#include "kernels/thread_pool.h"

namespace moe {
namespace {

// A parallel chunk of (token, head) items covers at least this many key elements read.
constexpr int64_t kMinChunkKeyElements = int64_t{1} << 15;

inline float dot(const float* a, const float* b, int n) {
  __m256 acc = _mm256_setzero_ps();
  int d = 0;
  for (; d + 8 <= n; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), acc);
  float sum = simd::horizontal_sum(acc);
  for (; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

// out[d] += w * v[d]
inline void axpy(float w, const float* v, float* out, int n) {
  const __m256 weight = _mm256_set1_ps(w);
  int d = 0;
  for (; d + 8 <= n; d += 8)
    _mm256_storeu_ps(out + d, _mm256_fmadd_ps(weight, _mm256_loadu_ps(v + d), _mm256_loadu_ps(out + d)));
  for (; d < n; ++d) out[d] += w * v[d];
}

}  // namespace

void causal_attention(const float* q, int64_t num_new, int64_t first_position, const int32_t* kv_slots,
                      const float* keys, const float* values, int64_t kv_stride, const AttentionShape& shape,
                      float* out) {
  const int hd = shape.head_dim;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int64_t q_stride = static_cast<int64_t>(shape.num_heads) * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t longest = first_position + num_new;
  const int64_t min_items = std::max<int64_t>(1, kMinChunkKeyElements / std::max<int64_t>(1, longest * hd));
  // Items are (token i, head h) pairs, independent of each other.
  parallel_for(num_new * shape.num_heads, min_items, [&](int64_t item_begin, int64_t item_end) {
    thread_local std::vector<float> scores;
    scores.resize(static_cast<size_t>(longest));
    for (int64_t item = item_begin; item < item_end; ++item) {
      const int64_t i = item / shape.num_heads;
      const int h = static_cast<int>(item % shape.num_heads);
      const int64_t visible = first_position + i + 1;
      const float* qh = q + i * q_stride + static_cast<int64_t>(h) * hd;
      const int64_t kv_offset = static_cast<int64_t>(h / group) * hd;
      float max_score = -INFINITY;
      for (int64_t p = 0; p < visible; ++p) {
        scores[p] = dot(qh, keys + kv_slots[p] * kv_stride + kv_offset, hd) * scale;
        max_score = std::max(max_score, scores[p]);
      }
      float total = 0.0f;
      for (int64_t p = 0; p < visible; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        total += scores[p];
      }
      float* oh = out + i * q_stride + static_cast<int64_t>(h) * hd;
      std::fill(oh, oh + hd, 0.0f);
      for (int64_t p = 0; p < visible; ++p) axpy(scores[p] / total, values + kv_slots[p] * kv_stride + kv_offset, oh, hd);
    }
  });
}

}  // namespace moe
