// causal_attention against a straightforward double-precision softmax(q·kᵀ/√d)·v, with grouped
// KV heads, scattered KV slots and a cached prefix.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace moe {
namespace {

TEST(CausalAttention, MatchesReferenceWithGroupedHeadsAndScatteredSlots) {
  const AttentionShape shape{8, 2, 20};  // head_dim 20: not a multiple of the SIMD width
  const int64_t prefix = 37, num_new = 5, positions = prefix + num_new, num_slots = 100;
  const int64_t kv_width = shape.num_kv_heads * shape.head_dim, q_width = shape.num_heads * shape.head_dim;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> keys(num_slots * kv_width), values(keys.size()), q(num_new * q_width);
  for (float& v : keys) v = normal(rng);
  for (float& v : values) v = normal(rng);
  for (float& v : q) v = normal(rng);
  std::vector<int32_t> slots(positions);
  for (int64_t p = 0; p < positions; ++p) slots[p] = static_cast<int32_t>((p * 37 + 11) % num_slots);

  std::vector<float> out(q.size());
  causal_attention(q.data(), num_new, prefix, slots.data(), keys.data(), values.data(), kv_width, shape, out.data());

  const int group = shape.num_heads / shape.num_kv_heads;
  for (int64_t i = 0; i < num_new; ++i)
    for (int h = 0; h < shape.num_heads; ++h) {
      const int64_t visible = prefix + i + 1, kv = (h / group) * shape.head_dim;
      std::vector<double> weights(visible);
      double max_score = -INFINITY, total = 0.0;
      for (int64_t p = 0; p < visible; ++p) {
        double dot = 0.0;
        for (int d = 0; d < shape.head_dim; ++d)
          dot += static_cast<double>(q[i * q_width + h * shape.head_dim + d]) * keys[slots[p] * kv_width + kv + d];
        weights[p] = dot / std::sqrt(static_cast<double>(shape.head_dim));
        max_score = std::max(max_score, weights[p]);
      }
      for (double& w : weights) total += (w = std::exp(w - max_score));
      for (int d = 0; d < shape.head_dim; ++d) {
        double want = 0.0;
        for (int64_t p = 0; p < visible; ++p) want += weights[p] / total * values[slots[p] * kv_width + kv + d];
        ASSERT_NEAR(out[i * q_width + h * shape.head_dim + d], want, 1e-5) << "token " << i << " head " << h << " dim " << d;
      }
    }
}

}  // namespace
}  // namespace moe
