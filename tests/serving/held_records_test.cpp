// The record of a request that asked for routing waits for its step's rows, after the scheduler has
// forgotten the request: its rid stays in use until the record is out (a client that reused it at
// once would otherwise get the old reply's end), and a stop string drops its completion's records.
#include <gtest/gtest.h>

#include "scheduler_service_support.h"

namespace moe {
namespace {

struct CapturingService {
  msg::WorkerSettings worker = [] {
    msg::WorkerSettings w = testing::small_worker_settings(5);
    w.capture_routing = true;
    return w;
  }();
  SchedulerService service{[this] {
                             SchedulerServiceOptions o = testing::small_scheduler_options(worker);
                             o.enable_routed_experts = true;
                             return o;
                           }(),
                           ServingModelInfo{2, 2, 4}};
  CapturingService() { EXPECT_TRUE(service.on_heartbeat({1, worker}).empty()); }
};

msg::TokenizedRequest routed(const std::string& rid, int32_t max_new_tokens) {
  msg::TokenizedRequest request = testing::six_token_request(rid, max_new_tokens);
  request.routing.return_routed_experts = true;
  return request;
}

// The rows of every token of `batch`, 2 MoE layers of top-2, each id `expert`.
std::vector<msg::StepRouting> rows_of(const msg::WorkerBatch& batch, int16_t expert) {
  msg::StepRouting step;
  step.step = batch.step;
  step.rows.num_layers = 2;
  step.rows.top_k = 2;
  step.rows.expert_ids.assign(batch.token_ids.size() * 4, expert);
  return {step};
}

TEST(HeldRecords, ARidStaysInUseUntilItsFinalRecordWentOutWithItsRows) {
  CapturingService s;
  ASSERT_FALSE(s.service.add_request(routed("a", 1)));
  const msg::WorkerBatch batch = *s.service.next_batch();
  s.service.on_worker_result(testing::sevens(batch, 1));  // the only token: finished, rows not in
  EXPECT_FALSE(s.service.has_unfinished());
  EXPECT_TRUE(s.service.awaiting_rows());
  EXPECT_TRUE(s.service.take_output().items.empty());
  const std::optional<msg::ErrorReply> refused = s.service.add_request(routed("a", 1));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, 409);

  s.service.on_routing(rows_of(batch, 3));
  const msg::DetokenizeBatch out = s.service.take_output();
  ASSERT_EQ(out.items.size(), 1u);
  EXPECT_EQ(out.items[0].output_ids, std::vector<int32_t>{7});
  EXPECT_TRUE(out.items[0].finish_reason);
  EXPECT_EQ(out.items[0].routed_experts.num_rows(), 6);  // the prompt's; the last token was not fed
  EXPECT_FALSE(s.service.awaiting_rows());
  EXPECT_FALSE(s.service.add_request(routed("a", 1)));
}

TEST(HeldRecords, AStopStringDropsItsCompletionsHeldRecordsAndFreesTheRid) {
  CapturingService s;
  ASSERT_FALSE(s.service.add_request(routed("s", 5)));
  const msg::WorkerBatch batch = *s.service.next_batch();
  s.service.on_worker_result(testing::sevens(batch, 1));  // its first token's record waits for rows
  s.service.finish_by_stop_string("s", 0, 1);              // the detokenizer ended the reply there
  EXPECT_FALSE(s.service.has_unfinished());
  EXPECT_FALSE(s.service.add_request(routed("s", 1)));  // a new request of that rid
  s.service.on_routing(rows_of(batch, 3));
  EXPECT_TRUE(s.service.take_output().items.empty());  // the old record went nowhere
  EXPECT_FALSE(s.service.awaiting_rows());
}

}  // namespace
}  // namespace moe
