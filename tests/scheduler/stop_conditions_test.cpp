// Request::stop_reason: the token-level stop conditions checked after every sampled token.
#include <gtest/gtest.h>

#include "scheduler/request.h"

namespace moe {
namespace {

// A request that has produced `outputs` tokens, the last one `last`.
Request with_outputs(int num_outputs, int32_t last) {
  Request request;
  request.input_ids = {1};
  request.output_ids.assign(static_cast<size_t>(num_outputs - 1), 0);
  request.output_ids.push_back(last);
  return request;
}

TEST(StopConditions, StopsOnEosUnlessIgnored) {
  Request request = with_outputs(3, 8);
  request.sampling.max_new_tokens = 10;
  const std::vector<int32_t> eos = {7, 8};
  auto reason = request.stop_reason(eos);
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->kind, msg::FinishKind::Stop);
  EXPECT_EQ(*reason->matched_token, 8);
  EXPECT_FALSE(with_outputs(3, 5).stop_reason(eos));
  request.sampling.ignore_eos = true;
  EXPECT_FALSE(request.stop_reason(eos));
}

TEST(StopConditions, StopTokenIdsApplyEvenWhenIgnoringEos) {
  Request request = with_outputs(1, 42);
  request.sampling.stop_token_ids = {42};
  request.sampling.ignore_eos = true;
  auto reason = request.stop_reason({});
  ASSERT_TRUE(reason);
  EXPECT_EQ(*reason->matched_token, 42);
}

TEST(StopConditions, LengthLimitAndStopTokenWinsOnTheLastToken) {
  const std::vector<int32_t> eos = {7};
  auto limited = [](int num_outputs, int32_t last) {
    Request request = with_outputs(num_outputs, last);
    request.sampling.max_new_tokens = 4;
    return request;
  };
  EXPECT_FALSE(limited(3, 1).stop_reason(eos));
  auto at_limit = limited(4, 1).stop_reason(eos);
  ASSERT_TRUE(at_limit);
  EXPECT_EQ(at_limit->kind, msg::FinishKind::Length);
  auto eos_at_limit = limited(4, 7).stop_reason(eos);
  ASSERT_TRUE(eos_at_limit);
  EXPECT_EQ(eos_at_limit->kind, msg::FinishKind::Stop);
}

}  // namespace
}  // namespace moe
