// routed_experts_include_last: a request that asked for its last token's routing gets one more step
// feeding that token without sampling, with a KV slot of its own, and only then finishes.
#include <gtest/gtest.h>

#include "common/error.h"
#include "fake_worker.h"
#include "scheduler_driver.h"

namespace moe::test {
namespace {

SchedulerConfig config_with_pool(int64_t pool, int64_t chunk = 16) {
  SchedulerConfig config;
  config.max_total_tokens = pool;
  config.chunked_prefill_size = chunk;
  config.context_length = 64;
  return config;
}

Request route_last(std::string rid, std::vector<int32_t> prompt, int max_new_tokens, uint64_t seed, int n = 1) {
  Request request = make_request(std::move(rid), std::move(prompt), max_new_tokens, seed, n);
  request.routing.return_routed_experts = true;
  request.routing.include_last = true;
  return request;
}

// The last batch entry of (rid, index): its token ids, positions and whether it sampled.
struct LastEntry {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  bool needs_logits = true;
};
LastEntry last_entry(const RunLog& log, const std::string& rid, int index) {
  LastEntry entry;
  for (const ScheduledBatch& batch : log.batches) {
    int64_t offset = 0;
    for (size_t i = 0; i < batch.sequences.size(); ++i) {
      const msg::WorkerSequence& seq = batch.sequences[i];
      if (batch.owners[i].rid == rid && batch.owners[i].index == index) {
        entry.tokens.assign(batch.token_ids.begin() + offset,
                            batch.token_ids.begin() + offset + seq.num_new_tokens);
        entry.positions.assign(batch.positions.begin() + offset,
                               batch.positions.begin() + offset + seq.num_new_tokens);
        entry.needs_logits = seq.needs_logits;
      }
      offset += seq.num_new_tokens;
    }
  }
  return entry;
}

TEST(SchedulerRouteLast, FeedsTheLastTokenWithoutSamplingThenFinishes) {
  Scheduler scheduler(config_with_pool(256));
  FakeWorker worker(scheduler.kv_cache_slots());
  scheduler.add_request(route_last("last", prompt_of(5, 1), 4, 9, 2));
  scheduler.add_request(make_request("plain", prompt_of(5, 100), 4, 9));
  RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });

  for (int index = 0; index < 2; ++index) {
    const Reply& done = log.replies.at({"last", index});
    EXPECT_EQ(done.output_ids, reference_output(prompt_of(5, 1), 9 + index, 4));
    EXPECT_EQ(done.reason.kind, msg::FinishKind::Length);
    EXPECT_EQ(done.kv_slots.size(), 9u);  // prompt + every output, the last one included
    const LastEntry entry = last_entry(log, "last", index);
    EXPECT_EQ(entry.tokens, std::vector<int32_t>{done.output_ids.back()});
    EXPECT_EQ(entry.positions, std::vector<int32_t>{8});
    EXPECT_FALSE(entry.needs_logits);
  }
  const Reply& plain = log.replies.at({"plain", 0});
  EXPECT_EQ(plain.output_ids, reference_output(prompt_of(5, 100), 9, 4));
  EXPECT_EQ(plain.kv_slots.size(), 8u);
  EXPECT_TRUE(last_entry(log, "plain", 0).needs_logits);
  scheduler.flush_cache();
  EXPECT_EQ(scheduler.stats().kv_slots_used, 0);
}

TEST(SchedulerRouteLast, StopTokenFinishesAfterTheExtraStepWithItsReason) {
  Scheduler scheduler(config_with_pool(256));
  FakeWorker worker(scheduler.kv_cache_slots());
  const std::vector<int32_t> reference = reference_output(prompt_of(4, 1), 5, 6);
  Request request = route_last("stop", prompt_of(4, 1), 6, 5);
  request.sampling.stop_token_ids = {reference[2]};
  scheduler.add_request(request);
  RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });
  const Reply& done = log.replies.at({"stop", 0});
  EXPECT_EQ(done.output_ids, std::vector<int32_t>(reference.begin(), reference.begin() + 3));
  EXPECT_EQ(done.reason.kind, msg::FinishKind::Stop);
  EXPECT_EQ(done.kv_slots.size(), 7u);
}

// Runs steps until rid has sampled `outputs` output tokens; the replies so far.
Replies step_until_outputs(Scheduler& scheduler, FakeWorker& worker, const std::string& rid, size_t outputs) {
  Replies replies;
  while (replies[{rid, 0}].output_ids.size() < outputs) {
    auto batch = scheduler.schedule_step();
    join(scheduler.process_result(*batch, worker.run(*batch), {}), replies);
  }
  return replies;
}

TEST(SchedulerRouteLast, AStopStringAfterTheTokenWasFedFinishesAtOnceDroppingLaterTokens) {
  Scheduler scheduler(config_with_pool(256));
  FakeWorker worker(scheduler.kv_cache_slots());
  scheduler.add_request(route_last("s", prompt_of(4, 1), 10, 5));
  // Outputs 0..3 fed, output 4 just sampled: the records so far cover 8 rows.
  Replies replies = step_until_outputs(scheduler, worker, "s", 5);
  EXPECT_EQ(replies.at({"s", 0}).kv_slots.size(), 8u);
  // The detokenizer saw the stop string end at output 2: outputs 3 and 4 are dropped, and the rows
  // of the kept ones (prompt + 3, the last one's included) went out already.
  std::optional<CompletionRecord> done = scheduler.stop_at_output("s", 0, 3, msg::FinishReason::stop_string("END"));
  ASSERT_TRUE(done);
  EXPECT_EQ(*done->finish_reason->matched_text, "END");
  EXPECT_TRUE(done->output_ids.empty());
  EXPECT_TRUE(done->row_slots.empty());
  EXPECT_FALSE(scheduler.has_unfinished());
  scheduler.flush_cache();
  EXPECT_EQ(scheduler.stats().kv_slots_used, 0);
}

TEST(SchedulerRouteLast, AStopStringOnTheNewestTokenFeedsItWithoutSamplingFirst) {
  Scheduler scheduler(config_with_pool(256));
  FakeWorker worker(scheduler.kv_cache_slots());
  scheduler.add_request(route_last("s", prompt_of(4, 1), 10, 5));
  Replies replies = step_until_outputs(scheduler, worker, "s", 3);  // output 2 just sampled, never fed
  EXPECT_FALSE(scheduler.stop_at_output("s", 0, 3, msg::FinishReason::stop_string("END")));
  auto batch = scheduler.schedule_step();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->positions, std::vector<int32_t>{6});
  EXPECT_FALSE(batch->sequences[0].needs_logits);
  const std::vector<CompletionRecord> records = scheduler.process_result(*batch, worker.run(*batch), {});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].output_ids.empty());
  EXPECT_EQ(*records[0].finish_reason->matched_text, "END");
  EXPECT_EQ(records[0].row_slots.size(), 1u);  // the last token's row, fed now
  join(records, replies);
  EXPECT_EQ(replies.at({"s", 0}).output_ids, reference_output(prompt_of(4, 1), 5, 3));
  EXPECT_EQ(replies.at({"s", 0}).kv_slots.size(), 7u);
  EXPECT_FALSE(scheduler.schedule_step());
}

TEST(SchedulerRouteLast, TheLastTokenNeedsRoomInTheContext) {
  Scheduler scheduler(config_with_pool(256));  // context 64
  FakeWorker worker(scheduler.kv_cache_slots());
  scheduler.add_request(route_last("edge", prompt_of(60, 1), 100, 1));
  EXPECT_THROW(scheduler.add_request(route_last("full", prompt_of(64, 1), 4, 1)), std::logic_error);  // the front door refuses it first
  RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });
  const Reply& done = log.replies.at({"edge", 0});
  EXPECT_EQ(done.output_ids.size(), 4u);  // one fewer than without include_last: the last is fed too
  EXPECT_EQ(done.kv_slots.size(), 64u);
}

TEST(SchedulerRouteLast, PreemptedWhileFinishingIsRecomputedWithoutSampling) {
  Scheduler scheduler(config_with_pool(40, 8));
  FakeWorker worker(scheduler.kv_cache_slots());
  for (int i = 0; i < 4; ++i) scheduler.add_request(route_last(numbered_rid(i), prompt_of(6, 10 * i), 6, 3));
  RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });
  EXPECT_GT(scheduler.stats().num_preemptions, 0);
  for (int i = 0; i < 4; ++i) {
    const Reply& done = log.replies.at({numbered_rid(i), 0});
    EXPECT_EQ(done.output_ids, reference_output(prompt_of(6, 10 * i), 3, 6));
    EXPECT_EQ(done.kv_slots.size(), 12u);
    EXPECT_FALSE(last_entry(log, numbered_rid(i), 0).needs_logits);
  }
}

}  // namespace
}  // namespace moe::test
