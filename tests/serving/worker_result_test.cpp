// A worker result the scheduler cannot apply (a worker bug, or a mismatched build): the step stays
// in flight on both sides, so failing every live request frees it and serving goes on; it is never
// half forgotten, which left its requests marked in flight, never to be scheduled again.
#include <gtest/gtest.h>

#include "common/error.h"
#include "scheduler_service_support.h"

namespace moe {
namespace {

TEST(WorkerResult, AResultThatDoesNotFitItsStepLeavesItInFlightUntilEveryRequestFails) {
  const msg::WorkerSettings worker = testing::small_worker_settings(99);
  SchedulerService service(testing::small_scheduler_options(worker), ServingModelInfo{2, 2, 4});
  ASSERT_TRUE(service.on_heartbeat({1, worker}).empty());
  ASSERT_FALSE(service.add_request(testing::six_token_request("a", 4)));
  const auto batch = service.next_batch();
  ASSERT_TRUE(batch);
  msg::WorkerResult extra = testing::sevens(*batch, 1);
  extra.sampled_ids.push_back(7);
  EXPECT_THROW(service.on_worker_result(extra), Error);
  EXPECT_TRUE(service.step_in_flight(batch->step));
  const msg::WorkerBatch* none = nullptr;
  EXPECT_NO_THROW(none = service.next_batch());
  EXPECT_FALSE(none);

  const std::vector<msg::ErrorReply> errors = service.fail_all("the model worker's result does not fit its step");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rid, "a");
  EXPECT_FALSE(service.batch_in_flight());
  EXPECT_FALSE(service.has_unfinished());
  EXPECT_EQ(service.stats().kv_slots_used, service.stats().radix_cached_tokens);

  ASSERT_FALSE(service.add_request(testing::six_token_request("b", 1)));
  const auto next = service.next_batch();
  ASSERT_TRUE(next);
  service.on_worker_result(testing::sevens(*next, 1));
  const msg::DetokenizeBatch out = service.take_output();
  ASSERT_FALSE(out.items.empty());
  EXPECT_EQ(out.items.back().rid, "b");
  EXPECT_TRUE(out.items.back().finish_reason.has_value());
  EXPECT_FALSE(service.has_unfinished());
}

}  // namespace
}  // namespace moe
