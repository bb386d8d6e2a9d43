#include "scheduler/stop_conditions.h"

#include <gtest/gtest.h>

namespace moe {
namespace {

TEST(StopConditions, StopsOnEosUnlessIgnored) {
  StopConditions stop;
  stop.max_new_tokens = 10;
  stop.eos_token_ids = {7, 8};
  auto reason = stop.check(8, 3);
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->kind, FinishKind::Stop);
  EXPECT_EQ(std::get<int32_t>(reason->matched), 8);
  EXPECT_FALSE(stop.check(5, 3));
  stop.ignore_eos = true;
  EXPECT_FALSE(stop.check(8, 3));
}

TEST(StopConditions, StopTokenIdsApplyEvenWhenIgnoringEos) {
  StopConditions stop;
  stop.stop_token_ids = {42};
  stop.ignore_eos = true;
  auto reason = stop.check(42, 1);
  ASSERT_TRUE(reason);
  EXPECT_EQ(std::get<int32_t>(reason->matched), 42);
}

TEST(StopConditions, LengthLimitAndStopTokenWinsOnTheLastToken) {
  StopConditions stop;
  stop.max_new_tokens = 4;
  stop.eos_token_ids = {7};
  EXPECT_FALSE(stop.check(1, 3));
  auto at_limit = stop.check(1, 4);
  ASSERT_TRUE(at_limit);
  EXPECT_EQ(at_limit->kind, FinishKind::Length);
  auto eos_at_limit = stop.check(7, 4);
  ASSERT_TRUE(eos_at_limit);
  EXPECT_EQ(eos_at_limit->kind, FinishKind::Stop);
}

}  // namespace
}  // namespace moe
