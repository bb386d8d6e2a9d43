// Expert-load statistics: the counts the scheduler keeps from every step's rows equal the counts
// of the golden routing of every token the engine computed.
#include <gtest/gtest.h>

#include "capture/routing_host_cache.h"
#include "common/error.h"
#include "golden_serving_test.h"

namespace moe::testing {
namespace {

using ExpertLoad = GoldenServingTest;

TEST(ExpertLoadCounter, CountsEveryRankOfEveryLayerAndRejectsCorruptIds) {
  ExpertLoadCounter counter(2, 4);
  // Two rows, two layers, top-2.
  const std::vector<int16_t> rows = {0, 1, 2, 3, /* row 1 */ 1, 0, 2, 2};
  counter.add(rows.data(), 2, 2, 0, 2);
  EXPECT_EQ(counter.snapshot(), (std::vector<std::vector<uint64_t>>{{2, 2, 0, 0}, {0, 0, 3, 1}}));
  EXPECT_EQ(counter.rows_counted(), 2u);
  const std::vector<int16_t> corrupt = {0, 4, 0, 0};
  EXPECT_THROW(counter.add(corrupt.data(), 1, 2, 0, 2), Error);
}

TEST_F(ExpertLoad, CountsEqualTheGoldenRoutingOfEveryComputedToken) {
  auto h = make_pipeline({});
  EXPECT_EQ(h->service().expert_load(), std::vector<std::vector<uint64_t>>(golden_.num_moe_layers,
                                                                           std::vector<uint64_t>(h->config().num_experts, 0)));
  const auto joined = join_outputs(h->run(all_cases("e")));
  ASSERT_EQ(h->service().stats().cache_hit_tokens, 0);  // every token was computed exactly once

  const int L = golden_.num_moe_layers, K = golden_.top_k, E = h->config().num_experts;
  std::vector<std::vector<uint64_t>> from_replies(L, std::vector<uint64_t>(E, 0)), from_golden = from_replies;
  int64_t near_ties = 0;
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    const JoinedOutput& out = joined.at({std::string("e").append(std::to_string(i)), 0});
    for (size_t j = 0; j < out.rows.size(); ++j) ++from_replies[(j / K) % L][out.rows[j]];
    const std::vector<int32_t> golden = golden_rows(i, false);
    for (size_t j = 0; j < golden.size(); ++j) ++from_golden[(j / K) % L][golden[j]];
    for (size_t pos = 0; pos < golden.size() / (L * K); ++pos) near_ties += golden_.cases[i].router_min_gap[pos] < 1e-3f;
  }
  const auto load = h->service().expert_load();
  EXPECT_EQ(load, from_replies);
  // Where the golden router had a near-tie the engine may pick the other expert: each such
  // position can move one count per layer from one expert to another.
  int64_t differences = 0;
  for (int l = 0; l < L; ++l)
    for (int e = 0; e < E; ++e) differences += std::llabs(static_cast<int64_t>(load[l][e] - from_golden[l][e]));
  EXPECT_LE(differences, 2 * near_ties * L);
}

TEST_F(ExpertLoad, IsEmptyWithoutTheServerFlag) {
  HarnessOptions options;
  options.settings.enable_return_routed_experts = false;
  options.settings.enable_return_router_weights = false;
  auto h = make_pipeline(options);
  EXPECT_TRUE(h->service().expert_load().empty());
}

}  // namespace
}  // namespace moe::testing
