// The scheduler's side of speculative decoding: a decoding request's NGRAM draft tree goes into the
// step; the verify's result keeps the accepted path's KV slots as the request's next positions,
// returns the rejected nodes' slots to the pool and stops at stop conditions.
#include <gtest/gtest.h>

#include "common/error.h"
#include "scheduler/scheduler.h"
#include "scheduler_driver.h"
#include "worker/model_worker.h"

namespace moe::test {
namespace {

SchedulerConfig speculating_config() {
  SchedulerConfig config;
  config.max_total_tokens = 64;
  config.enable_radix_cache = false;  // every slot a request holds shows in kv_slots_used
  config.speculative.algorithm = SpeculativeAlgorithm::Ngram;
  config.speculative.num_steps = 3;
  config.speculative.eagle_topk = 2;
  config.speculative.num_draft_tokens = 8;
  return config;
}

// A request whose prompt repeats, prefilled, with 3 as its first output: "2 3" occurred before and
// was followed by 1 2 3, so the next step verifies the root 3 with drafts 1 2 3.
struct Prefilled {
  Scheduler scheduler{speculating_config(), 1};
  const std::vector<int32_t> prompt = {1, 2, 3, 1, 2, 3, 1, 2};
  explicit Prefilled(bool include_last = false, int max_new_tokens = 8) {
    Request request = make_request("r", prompt, max_new_tokens, 1);
    request.routing.return_routed_experts = include_last;
    request.routing.include_last = include_last;
    scheduler.add_request(std::move(request));
    const ScheduledBatch prefill = *scheduler.schedule_step();
    tables.apply(prefill);
    join(scheduler.process_result(prefill, std::vector<int32_t>{3}, {}), replies);
  }
  Replies replies;  // the prefill's record: token 3, the prompt's 8 rows
  SequenceTables tables;  // as the worker holds them after the prefill
  const Reply& reply() const { return replies.at({"r", 0}); }
};

TEST(SchedulerSpeculation, ADecodeCarriesItsDraftTree) {
  Prefilled p;
  const ScheduledBatch verify = *p.scheduler.schedule_step();
  ASSERT_EQ(verify.sequences.size(), 1u);
  const msg::WorkerSequence& seq = verify.sequences[0];
  EXPECT_EQ(verify.token_ids, (std::vector<int32_t>{3, 1, 2, 3}));
  EXPECT_EQ(seq.tree_parents, (std::vector<int32_t>{-1, 0, 1, 2}));
  EXPECT_EQ(verify.positions, (std::vector<int32_t>{8, 9, 10, 11}));
  EXPECT_EQ(seq.kept_slots, 8);  // the prompt's slots stay on the worker; the tree's 4 are sent
  EXPECT_EQ(seq.new_slots.size(), 4u);
  p.tables.apply(verify);
  EXPECT_EQ(to_forward_batch(verify, p.tables).num_logit_rows(), 4);  // every node's, as the model sees the tree
  EXPECT_EQ(p.scheduler.stats().kv_slots_used, 8 + 4);
}

TEST(SchedulerSpeculation, AcceptedDraftsKeepTheirSlotsAndRejectedOnesAreFreed) {
  Prefilled p;
  const ScheduledBatch verify = *p.scheduler.schedule_step();
  ASSERT_EQ(verify.sequences[0].kept_slots, 8);
  const std::vector<int32_t> tree_slots = verify.sequences[0].new_slots;
  // Drafts 1 and 2 accepted, then 9 drawn instead of the draft 3.
  const std::vector<CompletionRecord> records =
      p.scheduler.process_result(verify, std::vector<int32_t>{1, 2, 9}, {}, std::vector<int32_t>{3});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].output_ids, (std::vector<int32_t>{1, 2, 9}));
  EXPECT_FALSE(records[0].finish_reason);
  // Positions 0..10 are computed: the prompt (the prefill's record), the root (3) and the accepted
  // drafts 1 and 2 (this one's).
  EXPECT_EQ(p.reply().kv_slots.size(), 8u);
  EXPECT_EQ(records[0].row_slots, (std::vector<int32_t>{tree_slots[0], tree_slots[1], tree_slots[2]}));
  EXPECT_EQ(p.scheduler.stats().kv_slots_used, 11);  // the rejected draft's slot went back
  EXPECT_EQ(p.scheduler.stats().accepted_drafts, 2);
  EXPECT_EQ(p.scheduler.stats().draft_tokens, 3);
  // The kept nodes took their own places: the worker's table stands up to them, the rejected node
  // (position 11) is cut, and the next tree's slots go after them.
  const ScheduledBatch next = *p.scheduler.schedule_step();
  EXPECT_EQ(next.sequences[0].kept_slots, 11);
}

TEST(SchedulerSpeculation, AVerifyNeverYieldsMoreThanMaxNewTokensAllows) {
  Prefilled p(false, 3);  // one output so far, two more allowed: one draft at most
  const ScheduledBatch verify = *p.scheduler.schedule_step();
  EXPECT_EQ(verify.token_ids, (std::vector<int32_t>{3, 1}));
  join(p.scheduler.process_result(verify, std::vector<int32_t>{1, 5}, {}, std::vector<int32_t>{2}), p.replies);
  ASSERT_TRUE(p.reply().finished);
  EXPECT_EQ(p.reply().output_ids, (std::vector<int32_t>{3, 1, 5}));
  EXPECT_EQ(p.reply().kv_slots.size(), 10u);  // P + G - 1
  EXPECT_EQ(p.scheduler.stats().kv_slots_used, 0);
}

// A stop string that keeps every output while the verify is in flight, for a reply that includes
// its last token's row: the root was that token and is fed now; the drafts count for nothing.
TEST(SchedulerSpeculation, AStopStringDuringTheVerifyKeepsOnlyTheRoot) {
  Prefilled p(true);
  const ScheduledBatch verify = *p.scheduler.schedule_step();
  EXPECT_FALSE(p.scheduler.stop_at_output("r", 0, 1, msg::FinishReason::stop_string("x")).has_value());
  const std::vector<CompletionRecord> records =
      p.scheduler.process_result(verify, std::vector<int32_t>{1, 2, 9}, {}, std::vector<int32_t>{3});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].output_ids.empty());
  join(records, p.replies);
  ASSERT_TRUE(p.reply().finished);
  EXPECT_EQ(p.reply().output_ids, (std::vector<int32_t>{3}));
  EXPECT_EQ(p.reply().kv_slots.size(), 9u);  // P + G with include_last
  EXPECT_EQ(p.scheduler.stats().kv_slots_used, 0);
}

TEST(SchedulerSpeculation, ResultsThatDoNotFitTheTreeAreRefused) {
  Prefilled p;
  const ScheduledBatch verify = *p.scheduler.schedule_step();
  // 7 is no draft after the root.
  EXPECT_THROW(p.scheduler.process_result(verify, std::vector<int32_t>{7, 2}, {}, std::vector<int32_t>{2}), Error);
}

TEST(SchedulerSpeculation, ResultsWithMoreTokensThanTheTreeAreRefused) {
  Prefilled p;
  const ScheduledBatch verify = *p.scheduler.schedule_step();
  EXPECT_THROW(p.scheduler.process_result(verify, std::vector<int32_t>{1, 2, 3, 4, 5}, {}, std::vector<int32_t>{5}),
               Error);
}

TEST(SchedulerSpeculation, RequestsThatOptOutDecodeOneTokenAtATime) {
  Scheduler scheduler(speculating_config(), 1);
  Request request = make_request("r", {1, 2, 3, 1, 2, 3, 1, 2}, 8, 1);
  request.speculative = false;
  scheduler.add_request(std::move(request));
  scheduler.process_result(*scheduler.schedule_step(), std::vector<int32_t>{3}, {});
  const ScheduledBatch decode = *scheduler.schedule_step();
  EXPECT_EQ(decode.token_ids, (std::vector<int32_t>{3}));
  EXPECT_TRUE(decode.sequences[0].tree_parents.empty());
}

}  // namespace
}  // namespace moe::test
