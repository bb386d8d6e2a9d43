// Overlapped scheduling with the real model: the engine plans and runs step n+1 before it applies
// step n's result (the worker fills the tokens step n sampled in), and every golden case keeps its
// golden ids and routing rows, as with overlap off.
#include <gtest/gtest.h>

#include "common/error.h"
#include "golden_serving_test.h"
#include "worker/recent_samples.h"

namespace moe::testing {
namespace {

class OverlapServingTest : public GoldenServingTest {};

std::unique_ptr<EngineCore> engine_with_overlap(bool overlap) {
  HarnessOptions options;
  options.settings.disable_overlap_schedule = !overlap;
  return make_pipeline(options);
}

TEST_F(OverlapServingTest, TheNextStepIsPlannedBeforeTheResultAndFeedsTheSampledToken) {
  auto engine = engine_with_overlap(true);
  SchedulerService& service = engine->service();
  ASSERT_EQ(service.max_batches_in_flight(), 2);
  ASSERT_FALSE(engine->submit(all_cases("c").front()));
  const msg::WorkerBatch* prefill = service.next_batch();
  ASSERT_TRUE(prefill);
  const msg::WorkerBatch* decode = service.next_batch();  // no result applied yet
  ASSERT_TRUE(decode);
  ASSERT_EQ(decode->future_tokens.size(), 1u);
  EXPECT_EQ(decode->future_tokens[0].step, prefill->step);
  EXPECT_EQ(decode->token_ids, std::vector<int32_t>{msg::kFutureTokenId});
  EXPECT_FALSE(service.next_batch());  // two in flight
}

TEST_F(OverlapServingTest, EveryGoldenCaseAloneAndBatchedWithOverlapOnAndOff) {
  for (const bool overlap : {true, false}) {
    SCOPED_TRACE(overlap ? "overlap on" : "overlap off");
    auto engine = engine_with_overlap(overlap);
    for (size_t i = 0; i < golden_.cases.size(); ++i) {
      const auto alone = join_outputs(engine->run({all_cases("alone").at(i)}));
      expect_golden(alone.at({"alone" + std::to_string(i), 0}), i);
    }
    expect_all_golden(join_outputs(engine->run(all_cases("batched"))), "batched");
    const SchedulerStats stats = engine->service().stats();
    if (overlap)
      EXPECT_GT(stats.overlapped_tokens, 0);
    else
      EXPECT_EQ(stats.overlapped_tokens, 0);
  }
}

TEST_F(OverlapServingTest, PrefixHitsStayGoldenWithOverlap) {
  auto engine = engine_with_overlap(true);
  expect_prefix_hits_golden(*engine);
}

TEST(RecentSamples, FillsFutureTokensFromTheStepsItRememberedAndRefusesOthers) {
  RecentSamples recent;
  recent.remember(7, {11, 12, 13});
  recent.remember(8, {21});
  std::vector<int32_t> tokens = {5, msg::kFutureTokenId, 6, msg::kFutureTokenId};
  recent.fill(tokens, std::vector<msg::FutureToken>{{1, 7, 2}, {3, 8, 0}});
  EXPECT_EQ(tokens, (std::vector<int32_t>{5, 13, 6, 21}));
  EXPECT_THROW(recent.fill(tokens, std::vector<msg::FutureToken>{{1, 6, 0}}), Error);  // a step never run here
  EXPECT_THROW(recent.fill(tokens, std::vector<msg::FutureToken>{{1, 8, 1}}), Error);  // step 8 sampled one token
  EXPECT_THROW(recent.fill(tokens, std::vector<msg::FutureToken>{{4, 8, 0}}), Error);  // past the step's tokens
  for (uint64_t step = 9; step < 20; ++step) recent.remember(step, {1});
  EXPECT_THROW(recent.fill(tokens, std::vector<msg::FutureToken>{{1, 7, 0}}), Error);  // forgotten long ago
}

}  // namespace
}  // namespace moe::testing
