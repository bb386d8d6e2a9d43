#include "moe/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "common/error.h"
#include "kernels/linear.h"

namespace moe {
namespace {

// Softmax of one token's router logits in place, in float32 as torch computes it.
void softmax_in_place(float* values, int64_t count) {
  const float max_value = *std::max_element(values, values + count);
  float sum = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    values[i] = std::exp(values[i] - max_value);
    sum += values[i];
  }
  for (int64_t i = 0; i < count; ++i) values[i] /= sum;
}

}  // namespace

void route_tokens(const float* hidden, int64_t num_tokens, const WeightView& router_weight, int top_k,
                  bool normalize_top_k, Routing& out) {
  const int64_t num_experts = router_weight.rows;
  if (top_k < 1 || top_k > num_experts)
    throw Error("route_tokens: top_k " + std::to_string(top_k) + " is outside [1, " + std::to_string(num_experts) +
                "] (the router has " + std::to_string(num_experts) + " experts)");
  out.num_tokens = num_tokens;
  out.top_k = top_k;
  out.ids.resize(static_cast<size_t>(num_tokens * top_k));
  out.weights.resize(out.ids.size());

  std::vector<float> probs(static_cast<size_t>(num_tokens * num_experts));
  linear(hidden, num_tokens, router_weight, probs.data());
  std::vector<int32_t> order(static_cast<size_t>(num_experts));
  for (int64_t t = 0; t < num_tokens; ++t) {
    float* token_probs = probs.data() + t * num_experts;
    softmax_in_place(token_probs, num_experts);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int32_t a, int32_t b) {
      return token_probs[a] != token_probs[b] ? token_probs[a] > token_probs[b] : a < b;
    });
    float kept_sum = 0.0f;
    for (int j = 0; j < top_k; ++j) kept_sum += token_probs[order[j]];
    // Divide (not multiply by a reciprocal) so the weights round exactly as torch's `w /= w.sum()`.
    const float divisor = normalize_top_k ? kept_sum : 1.0f;
    for (int j = 0; j < top_k; ++j) {
      out.ids[t * top_k + j] = order[j];
      out.weights[t * top_k + j] = token_probs[order[j]] / divisor;
    }
  }
}

}  // namespace moe
