#include "moe/grouped_sigmoid_router.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/activation.h"

namespace moe {

void check_grouped_sigmoid_rule(int64_t num_experts, int top_k, const GroupedSigmoidRule& rule) {
  const bool groups_fit = rule.num_groups >= 1 && num_experts % rule.num_groups == 0 &&
                          num_experts / rule.num_groups >= 2 && rule.kept_groups >= 1 &&
                          rule.kept_groups <= rule.num_groups;
  if (!groups_fit)
    throw Error("grouped sigmoid routing: " + std::to_string(num_experts) + " experts cannot form " +
                std::to_string(rule.num_groups) + " groups of at least two, keeping " +
                std::to_string(rule.kept_groups));
  const int64_t kept_experts = num_experts / rule.num_groups * rule.kept_groups;
  if (top_k < 1 || top_k > kept_experts)
    throw Error("grouped sigmoid routing: top_k " + std::to_string(top_k) + " is outside [1, " +
                std::to_string(kept_experts) + "] (the experts of the kept groups)");
}

namespace {

// Sorts the first `count` of `order` by descending value (ties: lower index first).
void sort_top(std::vector<int32_t>& order, int count, const float* values) {
  std::partial_sort(order.begin(), order.begin() + count, order.end(), [&](int32_t a, int32_t b) {
    return values[a] != values[b] ? values[a] > values[b] : a < b;
  });
}

// Overwrites the biased scores of the experts outside the kept groups with -inf.
void exclude_dropped_groups(float* biased, int64_t num_experts, const GroupedSigmoidRule& rule,
                            std::vector<float>& group_scores, std::vector<int32_t>& group_order) {
  const int64_t group_size = num_experts / rule.num_groups;
  if (rule.kept_groups == rule.num_groups) return;
  for (int g = 0; g < rule.num_groups; ++g) {
    const float* group = biased + g * group_size;
    float best = -std::numeric_limits<float>::infinity(), second = best;
    for (int64_t i = 0; i < group_size; ++i) {
      if (group[i] > best) {
        second = best;
        best = group[i];
      } else if (group[i] > second) {
        second = group[i];
      }
    }
    group_scores[g] = best + second;
  }
  std::iota(group_order.begin(), group_order.end(), 0);
  sort_top(group_order, rule.kept_groups, group_scores.data());
  for (int j = rule.kept_groups; j < rule.num_groups; ++j)
    std::fill_n(biased + group_order[j] * group_size, group_size, -std::numeric_limits<float>::infinity());
}

}  // namespace

void route_tokens_grouped_sigmoid(const float* hidden, int64_t num_tokens, const WeightView& router_weight,
                                  const float* correction_bias, int top_k, const GroupedSigmoidRule& rule,
                                  Routing& out) {
  const int64_t num_experts = router_weight.rows;
  check_grouped_sigmoid_rule(num_experts, top_k, rule);
  std::vector<float> scores = router_logits(hidden, num_tokens, router_weight, top_k, out);
  std::vector<float> biased(static_cast<size_t>(num_experts));
  std::vector<float> group_scores(static_cast<size_t>(rule.num_groups));
  std::vector<int32_t> group_order(static_cast<size_t>(rule.num_groups));
  std::vector<int32_t> order(static_cast<size_t>(num_experts));
  for (int64_t t = 0; t < num_tokens; ++t) {
    float* token_scores = scores.data() + t * num_experts;
    for (int64_t e = 0; e < num_experts; ++e) {
      token_scores[e] = sigmoid(token_scores[e]);
      biased[e] = token_scores[e] + correction_bias[e];
    }
    exclude_dropped_groups(biased.data(), num_experts, rule, group_scores, group_order);
    std::iota(order.begin(), order.end(), 0);
    sort_top(order, top_k, biased.data());
    float kept_sum = 0.0f;
    for (int j = 0; j < top_k; ++j) kept_sum += token_scores[order[j]];
    // Divide (not multiply by a reciprocal) so the weights round as torch's `w /= w.sum() + 1e-20`.
    const float divisor = rule.normalize_top_k ? kept_sum + 1e-20f : 1.0f;
    for (int j = 0; j < top_k; ++j) {
      out.ids[t * top_k + j] = order[j];
      out.weights[t * top_k + j] = token_scores[order[j]] / divisor * rule.scaling_factor;
    }
  }
}

}  // namespace moe
