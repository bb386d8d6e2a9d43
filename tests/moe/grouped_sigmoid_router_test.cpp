// route_tokens_grouped_sigmoid on hand-computed cases. The router is the identity, so each token's
// hidden row is its router logits.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/error.h"
#include "moe/grouped_sigmoid_router.h"

namespace moe {
namespace {

double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Routes tokens whose logits are the rows of `logits` ([T, E]) through an identity router.
Routing route(const std::vector<float>& logits, const std::vector<float>& bias, int top_k,
              const GroupedSigmoidRule& rule) {
  const int64_t E = static_cast<int64_t>(bias.size());
  std::vector<float> identity(static_cast<size_t>(E * E), 0.0f);
  for (int64_t e = 0; e < E; ++e) identity[e * E + e] = 1.0f;
  Routing routing;
  route_tokens_grouped_sigmoid(logits.data(), static_cast<int64_t>(logits.size()) / E,
                               WeightView{identity.data(), DType::F32, E, E}, bias.data(), top_k, rule, routing);
  return routing;
}

TEST(GroupedSigmoidRouter, BiasChangesTheChoiceButNotTheWeights) {
  const GroupedSigmoidRule rule{.num_groups = 1, .kept_groups = 1, .normalize_top_k = true, .scaling_factor = 1.0f};
  // Scores 0.881, 0.731, 0.5, 0.269; the bias lifts expert 2 to 1.0, above expert 0's 0.881.
  const Routing routing = route({2.0f, 1.0f, 0.0f, -1.0f}, {0.0f, 0.0f, 0.5f, 0.0f}, 2, rule);
  EXPECT_EQ(routing.ids, (std::vector<int32_t>{2, 0}));
  const double sum = sigmoid_of(0.0) + sigmoid_of(2.0);
  EXPECT_NEAR(routing.weights[0], sigmoid_of(0.0) / sum, 1e-6);
  EXPECT_NEAR(routing.weights[1], sigmoid_of(2.0) / sum, 1e-6);
}

TEST(GroupedSigmoidRouter, ExpertsOfDroppedGroupsAreNeverChosen) {
  const GroupedSigmoidRule rule{.num_groups = 4, .kept_groups = 2, .normalize_top_k = true, .scaling_factor = 2.5f};
  // Group sums of the two best scores: 1.0 (expert 0 is the best expert, its partner poor), 1.46,
  // 1.25, 0.54: groups 1 and 2 are kept, so expert 0 is out.
  const Routing routing =
      route({3.0f, -3.0f, 1.0f, 1.0f, 0.5f, 0.5f, -1.0f, -1.0f}, std::vector<float>(8, 0.0f), 3, rule);
  EXPECT_EQ(routing.ids, (std::vector<int32_t>{2, 3, 4}));
  const double sum = 2 * sigmoid_of(1.0) + sigmoid_of(0.5);
  EXPECT_NEAR(routing.weights[0], 2.5 * sigmoid_of(1.0) / sum, 1e-6);
  EXPECT_NEAR(routing.weights[1], 2.5 * sigmoid_of(1.0) / sum, 1e-6);
  EXPECT_NEAR(routing.weights[2], 2.5 * sigmoid_of(0.5) / sum, 1e-6);
}

TEST(GroupedSigmoidRouter, GroupsAreRankedByBiasedScores) {
  const GroupedSigmoidRule rule{.num_groups = 2, .kept_groups = 1, .normalize_top_k = true, .scaling_factor = 1.0f};
  // Unbiased, group 0 wins (0.731 + 0.731 against 0.5 + 0.5); the bias makes group 1's 1.5 + 1.5 win.
  const Routing routing = route({1.0f, 1.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 1.0f, 1.0f}, 1, rule);
  EXPECT_EQ(routing.ids, (std::vector<int32_t>{2}));
  EXPECT_FLOAT_EQ(routing.weights[0], 1.0f);
}

TEST(GroupedSigmoidRouter, TiesGoToTheLowerIdForExpertsAndGroups) {
  const GroupedSigmoidRule one_group{.num_groups = 1, .kept_groups = 1};
  const Routing experts = route({0.0f, 0.0f, 0.0f, 0.0f}, std::vector<float>(4, 0.0f), 3, one_group);
  EXPECT_EQ(experts.ids, (std::vector<int32_t>{0, 1, 2}));
  for (float w : experts.weights) EXPECT_NEAR(w, 1.0 / 3.0, 1e-7);
  const GroupedSigmoidRule two_groups{.num_groups = 2, .kept_groups = 1};
  // Both groups tie; group 0 is kept although expert 3 alone scores highest.
  const Routing groups = route({0.5f, -0.5f, -0.5f, 0.5f}, std::vector<float>(4, 0.0f), 2, two_groups);
  EXPECT_EQ(groups.ids, (std::vector<int32_t>{0, 1}));
}

TEST(GroupedSigmoidRouter, UnnormalisedWeightsAreTheScoresScaled) {
  const GroupedSigmoidRule rule{.num_groups = 1, .kept_groups = 1, .normalize_top_k = false, .scaling_factor = 2.0f};
  const Routing routing = route({1.0f, -2.0f, 0.0f, 3.0f}, std::vector<float>(4, 0.0f), 2, rule);
  EXPECT_EQ(routing.ids, (std::vector<int32_t>{3, 0}));
  EXPECT_NEAR(routing.weights[0], 2.0 * sigmoid_of(3.0), 1e-6);
  EXPECT_NEAR(routing.weights[1], 2.0 * sigmoid_of(1.0), 1e-6);
}

TEST(GroupedSigmoidRouter, EachTokenIsRoutedOnItsOwn) {
  const GroupedSigmoidRule rule{.num_groups = 2, .kept_groups = 1, .normalize_top_k = true, .scaling_factor = 1.0f};
  const std::vector<float> bias{0.1f, 0.0f, 0.0f, 0.2f};
  const Routing both = route({2.0f, 1.0f, 0.0f, 0.0f, -1.0f, 0.0f, 1.0f, 2.0f}, bias, 2, rule);
  const Routing first = route({2.0f, 1.0f, 0.0f, 0.0f}, bias, 2, rule);
  const Routing second = route({-1.0f, 0.0f, 1.0f, 2.0f}, bias, 2, rule);
  EXPECT_EQ(both.ids, (std::vector<int32_t>{0, 1, 3, 2}));
  EXPECT_EQ(std::vector<int32_t>(both.ids.begin(), both.ids.begin() + 2), first.ids);
  EXPECT_EQ(std::vector<int32_t>(both.ids.begin() + 2, both.ids.end()), second.ids);
  EXPECT_EQ(std::vector<float>(both.weights.begin() + 2, both.weights.end()), second.weights);
}

TEST(GroupedSigmoidRouter, RulesTheRouterCannotSatisfyAreErrors) {
  const std::vector<float> logits(6, 0.0f), bias(6, 0.0f);
  EXPECT_THROW(route(logits, bias, 1, {.num_groups = 4, .kept_groups = 1}), Error);  // 6 experts in 4 groups
  EXPECT_THROW(route(logits, bias, 1, {.num_groups = 6, .kept_groups = 1}), Error);  // groups of one
  EXPECT_THROW(route(logits, bias, 1, {.num_groups = 2, .kept_groups = 3}), Error);
  EXPECT_THROW(route(logits, bias, 4, {.num_groups = 2, .kept_groups = 1}), Error);  // 3 experts kept
  EXPECT_THROW(route(logits, bias, 0, {.num_groups = 1, .kept_groups = 1}), Error);
}

}  // namespace
}  // namespace moe
