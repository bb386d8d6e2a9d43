// route_tokens against a brute-force softmax and full sort, as torch's softmax + topk compute it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "moe/moe_runner.h"
#include "moe_fixtures.h"

namespace moe {
namespace {

using testing::random_floats;
using testing::random_weight;

// Brute force for one token: double-precision softmax, every expert sorted by (prob desc, id asc).
void expect_brute_force_routing(const float* x, const WeightView& router, int top_k, bool normalize,
                                const int32_t* ids, const float* weights) {
  const int64_t E = router.rows;
  std::vector<double> probs(E);
  for (int64_t e = 0; e < E; ++e)
    for (int64_t h = 0; h < router.cols; ++h) probs[e] += x[h] * router.at(e, h);
  const double max_logit = *std::max_element(probs.begin(), probs.end());
  double sum = 0.0;
  for (double& p : probs) sum += (p = std::exp(p - max_logit));
  for (double& p : probs) p /= sum;
  std::vector<int32_t> order(E);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
  double kept = 0.0;
  for (int j = 0; j < top_k; ++j) kept += probs[order[j]];
  for (int j = 0; j < top_k; ++j) {
    EXPECT_EQ(ids[j], order[j]) << "position " << j;
    EXPECT_NEAR(weights[j], probs[order[j]] / (normalize ? kept : 1.0), 1e-6) << "position " << j;
  }
}

TEST(RouteTokens, MatchesBruteForceSoftmaxTopK) {
  constexpr int64_t kHidden = 24;
  for (DType dtype : {DType::F32, DType::BF16})
    for (uint64_t seed = 1; seed <= 10; ++seed)
      for (int64_t T : {0, 1, 13})
        for (int num_experts : {8, 60})
          for (int top_k : {1, 4, 8})
            for (bool normalize : {false, true}) {
              const auto router = random_weight(num_experts, kHidden, dtype, seed);
              const std::vector<float> hidden = random_floats(T * kHidden, seed + 50, 3.0f);
              Routing routing;
              route_tokens(hidden.data(), T, router->view, top_k, normalize, routing);
              ASSERT_EQ(routing.num_tokens, T);
              ASSERT_EQ(routing.top_k, top_k);
              ASSERT_EQ(routing.ids.size(), static_cast<size_t>(T * top_k));
              ASSERT_EQ(routing.weights.size(), static_cast<size_t>(T * top_k));
              for (int64_t t = 0; t < T; ++t)
                expect_brute_force_routing(hidden.data() + t * kHidden, router->view, top_k, normalize,
                                           routing.ids.data() + t * top_k, routing.weights.data() + t * top_k);
            }
}

TEST(RouteTokens, RenormalisedWeightsSumToOneAndRawOnesDoNot) {
  const auto router = random_weight(12, 16, DType::F32, 3);
  const std::vector<float> hidden = random_floats(16, 4);
  Routing raw, normalized;
  route_tokens(hidden.data(), 1, router->view, 3, false, raw);
  route_tokens(hidden.data(), 1, router->view, 3, true, normalized);
  EXPECT_EQ(raw.ids, normalized.ids);
  EXPECT_NEAR(normalized.weights[0] + normalized.weights[1] + normalized.weights[2], 1.0f, 1e-6f);
  EXPECT_LT(raw.weights[0] + raw.weights[1] + raw.weights[2], 0.99f);
  EXPECT_NEAR(normalized.weights[1] / normalized.weights[0], raw.weights[1] / raw.weights[0], 1e-6f);
}

TEST(RouteTokens, TiesGoToTheLowerExpertId) {
  // Experts 5 and 2 share the largest logit, 1 and 6 the next; the rest score lower.
  const int64_t H = 2;
  const std::vector<float> logit_halves = {0, 1.5f, 2, 0, 0, 2, 1.5f, 0};
  std::vector<float> router;
  for (float half : logit_halves) router.insert(router.end(), {half, half});
  const WeightView view{router.data(), DType::F32, 8, H};
  const std::vector<float> hidden = {1.0f, 1.0f};
  Routing routing;
  route_tokens(hidden.data(), 1, view, 4, false, routing);
  EXPECT_EQ(routing.ids, (std::vector<int32_t>{2, 5, 1, 6}));
  EXPECT_EQ(routing.weights[0], routing.weights[1]);
  EXPECT_EQ(routing.weights[2], routing.weights[3]);

  // A uniform router: every probability is 1/E, so the k lowest ids win.
  const std::vector<float> zeros(8 * H, 0.0f);
  route_tokens(hidden.data(), 1, WeightView{zeros.data(), DType::F32, 8, H}, 3, true, routing);
  EXPECT_EQ(routing.ids, (std::vector<int32_t>{0, 1, 2}));
  for (float w : routing.weights) EXPECT_FLOAT_EQ(w, 1.0f / 3.0f);
}

TEST(RouteTokens, RejectsATopKLargerThanTheExpertCount) {
  const std::vector<float> router(4 * 2, 0.0f), hidden(2, 1.0f);
  Routing routing;
  EXPECT_THROW(route_tokens(hidden.data(), 1, WeightView{router.data(), DType::F32, 4, 2}, 5, true, routing), Error);
  EXPECT_THROW(route_tokens(hidden.data(), 1, WeightView{router.data(), DType::F32, 4, 2}, 0, true, routing), Error);
}

}  // namespace
}  // namespace moe
