// Overlapped scheduling: step n+1 is planned before step n's result is applied, feeding each
// decoding request the token step n samples for it as a future token. Every output still equals the
// reference (the fake worker fills future tokens from the steps it ran and checks every slot it
// reads), and a request that stops at step n only wastes its share of step n+1.
#include <gtest/gtest.h>

#include <algorithm>

#include "fake_worker.h"
#include "scheduler_driver.h"

namespace moe::test {
namespace {

SchedulerConfig overlapped(int64_t pool, int64_t chunk = 0) {
  SchedulerConfig config;
  config.max_total_tokens = pool;
  config.chunked_prefill_size = chunk;
  config.overlap = true;
  return config;
}

WorkerFn runs_on(FakeWorker& worker) {
  return [&worker](const ScheduledBatch& batch) { return worker.run(batch); };
}

// Tokens fed for (rid, index) over every step of the log (future tokens included).
int64_t tokens_fed(const RunLog& log, const std::string& rid, int index = 0) {
  int64_t fed = 0;
  for (const ScheduledBatch& batch : log.batches)
    for (size_t i = 0; i < batch.sequences.size(); ++i)
      if (batch.owners[i].rid == rid && batch.owners[i].index == index)
        fed += batch.sequences[i].num_new_tokens;
  return fed;
}

// The rid of the sequence whose new tokens include the batch's token at token_index.
std::string rid_feeding(const ScheduledBatch& batch, int64_t token_index) {
  int64_t first = 0;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    first += batch.sequences[i].num_new_tokens;
    if (token_index < first) return batch.owners[i].rid;
  }
  return {};
}

size_t steps_with_future_tokens(const RunLog& log) {
  return static_cast<size_t>(std::count_if(log.batches.begin(), log.batches.end(),
                                           [](const ScheduledBatch& b) { return !b.future_tokens.empty(); }));
}

TEST(SchedulerOverlap, PlansTheNextStepBeforeTheResultWithTheSampledTokenAsAFutureToken) {
  Scheduler scheduler(overlapped(256));
  EXPECT_EQ(scheduler.max_batches_in_flight(), 2);
  scheduler.add_request(make_request("a", prompt_of(5, 1), 4, 7));
  std::optional<ScheduledBatch> prefill = scheduler.schedule_step();
  ASSERT_TRUE(prefill);
  std::optional<ScheduledBatch> next = scheduler.schedule_step();  // the prefill's result is not back
  ASSERT_TRUE(next);
  EXPECT_THROW(scheduler.schedule_step(), std::logic_error);  // two in flight at most
  ASSERT_EQ(next->token_ids, std::vector<int32_t>{msg::kFutureTokenId});
  EXPECT_EQ(next->positions, std::vector<int32_t>{5});
  ASSERT_EQ(next->future_tokens.size(), 1u);
  EXPECT_EQ(next->future_tokens[0].step, prefill->step);
  EXPECT_EQ(next->future_tokens[0].sample, 0);
  EXPECT_EQ(next->future_tokens[0].token_index, 0);
  EXPECT_EQ(next->sequences[0].sampling.step, 1u);  // the second output token's draw
  // Its slots: the prompt's, which the worker holds from the prefill, and one for the future token.
  EXPECT_EQ(next->sequences[0].kept_slots, 5);
  EXPECT_EQ(next->sequences[0].new_slots.size(), 1u);
}

TEST(SchedulerOverlap, EveryOutputMatchesTheReferenceBatchedAndChunked) {
  for (const int64_t chunk : {int64_t{0}, int64_t{7}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Scheduler scheduler(overlapped(4096, chunk));
    FakeWorker worker(scheduler.kv_cache_slots());
    for (int i = 0; i < 8; ++i)
      scheduler.add_request(make_request(numbered_rid(i), prompt_of(3 + 5 * i, 100 * i), 3 + 2 * i, 11 + i));
    const RunLog log = run_in_flight(scheduler, runs_on(worker));
    ASSERT_EQ(log.replies.size(), 8u);
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(log.replies.at({numbered_rid(i), 0}).output_ids,
                reference_output(prompt_of(3 + 5 * i, 100 * i), 11 + i, 3 + 2 * i));
      // Nothing computed past the end: a request that runs to max_new_tokens feeds all but its last token.
      EXPECT_EQ(tokens_fed(log, numbered_rid(i)), 3 + 5 * i + 3 + 2 * i - 1);
    }
    EXPECT_GT(steps_with_future_tokens(log), 10u);
    EXPECT_EQ(scheduler.stats().kv_slots_used, scheduler.stats().radix_cached_tokens);  // nothing leaked
  }
}

TEST(SchedulerOverlap, PrefixHitsAndParallelCompletionsMatchTheReference) {
  Scheduler scheduler(overlapped(4096));
  FakeWorker worker(scheduler.kv_cache_slots());
  scheduler.add_request(make_request("first", prompt_of(12, 1), 6, 3, 3));
  const RunLog first = run_in_flight(scheduler, runs_on(worker));
  scheduler.add_request(make_request("again", prompt_of(12, 1), 6, 3));
  const RunLog again = run_in_flight(scheduler, runs_on(worker));
  for (int index = 0; index < 3; ++index)
    EXPECT_EQ(first.replies.at({"first", index}).output_ids, reference_output(prompt_of(12, 1), 3 + index, 6));
  EXPECT_EQ(again.replies.at({"again", 0}).output_ids, reference_output(prompt_of(12, 1), 3, 6));
  EXPECT_GT(again.replies.at({"again", 0}).cached_tokens, 0);
}

TEST(SchedulerOverlap, PreemptionUnderAShortPoolKeepsEveryOutputExact) {
  Scheduler scheduler(overlapped(48, 8));
  FakeWorker worker(scheduler.kv_cache_slots());
  for (int i = 0; i < 6; ++i)
    scheduler.add_request(make_request(numbered_rid(i), prompt_of(6, 50 * i), 12, 5 + i));
  const RunLog log = run_in_flight(scheduler, runs_on(worker));
  EXPECT_GT(scheduler.stats().num_preemptions, 0);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(log.replies.at({numbered_rid(i), 0}).output_ids, reference_output(prompt_of(6, 50 * i), 5 + i, 12));
}

TEST(SchedulerOverlap, AStopTokenSampledInFlightWastesOneTokenAndReturnsNothingAfterIt) {
  const std::vector<int32_t> reference = reference_output(prompt_of(4, 9), 21, 10);
  SchedulerConfig config = overlapped(256);
  config.eos_token_ids = {reference[3]};  // the 4th output token ends the request
  Scheduler scheduler(config);
  FakeWorker worker(scheduler.kv_cache_slots());
  Request request = make_request("eos", prompt_of(4, 9), 10, 21);
  request.sampling.ignore_eos = false;
  scheduler.add_request(request);
  const RunLog log = run_in_flight(scheduler, runs_on(worker));
  const std::vector<int32_t> expected(reference.begin(), reference.begin() + 4);
  EXPECT_EQ(log.replies.at({"eos", 0}).output_ids, expected);
  // Fed: the prompt and three outputs, plus the stop token itself by the step planned before it was
  // seen, whose sample was dropped.
  EXPECT_EQ(tokens_fed(log, "eos"), 4 + 3 + 1);
  EXPECT_EQ(log.replies.at({"eos", 0}).kv_slots.size(), 4u + 3u);
  EXPECT_EQ(scheduler.stats().kv_slots_used, scheduler.stats().radix_cached_tokens);
}

TEST(SchedulerOverlap, StopStringsAndAbortsWhileTwoStepsAreInFlight) {
  Scheduler scheduler(overlapped(1024));
  FakeWorker worker(scheduler.kv_cache_slots());
  for (int i = 0; i < 4; ++i)
    scheduler.add_request(make_request(numbered_rid(i), prompt_of(5, 20 * i), 20, 30 + i));
  bool stopped = false, aborted = false;
  int rounds = 0;
  std::vector<std::string> ended;
  const RunLog log = run_in_flight(scheduler, runs_on(worker), [&](Scheduler& s, RunLog& so_far) {
    // Once every request has several outputs (one per applied result) and two steps are in flight:
    // r1 meets a stop string that ends at its 3rd output token, then r2 is aborted.
    if (++rounds < 6 || s.batches_in_flight() < 2) return;
    if (!stopped) {
      if (auto done = s.stop_at_output("r1", 0, 3, msg::FinishReason::stop_string("x"))) {
        ended.push_back(done->rid);
        join({std::move(*done)}, so_far.replies);
        stopped = true;
      }
    } else if (!aborted) {
      for (const CompletionRecord& record : s.abort("r2", "client gone")) {
        ended.push_back(record.rid);
        join({record}, so_far.replies);
      }
      aborted = true;
    }
  });
  ASSERT_TRUE(stopped && aborted);
  EXPECT_EQ(ended, (std::vector<std::string>{"r1", "r2"}));
  // Each reply ends with its stop or abort record (join refuses records after it), its tokens those
  // of the run without them (a reply's tokens after a stop string are the detokenizer's to drop).
  const Reply& stopped_reply = log.replies.at({"r1", 0});
  const Reply& aborted_reply = log.replies.at({"r2", 0});
  EXPECT_EQ(stopped_reply.reason.kind, msg::FinishKind::Stop);
  EXPECT_EQ(aborted_reply.reason.kind, msg::FinishKind::Abort);
  const std::vector<int32_t> r1 = reference_output(prompt_of(5, 20), 31, 20);
  ASSERT_GE(stopped_reply.output_ids.size(), 3u);
  EXPECT_TRUE(std::equal(stopped_reply.output_ids.begin(), stopped_reply.output_ids.end(), r1.begin()));
  const std::vector<int32_t> r2 = reference_output(prompt_of(5, 40), 32, 20);
  EXPECT_TRUE(std::equal(aborted_reply.output_ids.begin(), aborted_reply.output_ids.end(), r2.begin()));
  for (const int i : {0, 3})
    EXPECT_EQ(log.replies.at({numbered_rid(i), 0}).output_ids, reference_output(prompt_of(5, 20 * i), 30 + i, 20));
  EXPECT_EQ(scheduler.stats().kv_slots_used, scheduler.stats().radix_cached_tokens);
}

TEST(SchedulerOverlap, PenalizedAndLastRowRequestsAreExactToo) {
  Scheduler scheduler(overlapped(512));
  FakeWorker worker(scheduler.kv_cache_slots());
  Request penalized = make_request("pen", prompt_of(5, 3), 6, 8);
  penalized.sampling.frequency_penalty = 0.5f;  // its draws need every output: never overlapped
  scheduler.add_request(penalized);
  Request last = make_request("last", prompt_of(5, 300), 6, 9);
  last.routing.return_routed_experts = true;
  last.routing.include_last = true;
  scheduler.add_request(last);
  const RunLog log = run_in_flight(scheduler, runs_on(worker));
  for (const ScheduledBatch& batch : log.batches)
    for (const msg::FutureToken& future : batch.future_tokens) EXPECT_NE(rid_feeding(batch, future.token_index), "pen");
  EXPECT_EQ(log.replies.at({"pen", 0}).output_ids, reference_output(prompt_of(5, 3), 8, 6));
  EXPECT_EQ(log.replies.at({"last", 0}).output_ids, reference_output(prompt_of(5, 300), 9, 6));
  // The last token's routing needs it fed: every position has its slot.
  EXPECT_EQ(log.replies.at({"last", 0}).kv_slots.size(), 5u + 6u);
}

}  // namespace
}  // namespace moe::test
