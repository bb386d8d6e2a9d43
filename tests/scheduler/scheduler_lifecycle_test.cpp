// Request lifecycle: validation, seeds, stop tokens, stop strings, abort and preemption.
#include <gtest/gtest.h>


#include "common/error.h"
#include "fake_worker.h"
#include "scheduler_driver.h"

namespace moe::test {
namespace {

SchedulerConfig small_config(int64_t pool, bool cache = true, int64_t chunk = 16) {
  SchedulerConfig config;
  config.max_total_tokens = pool;
  config.chunked_prefill_size = chunk;
  config.enable_radix_cache = cache;
  config.context_length = 64;
  return config;
}

// The front door (RequestPreparer, tests/frontend) refuses these with a clear error; reaching the
// scheduler anyway is a programming error, not a request to queue.
TEST(SchedulerLifecycle, RequestsTheFrontDoorRefusesAreLogicErrors) {
  Scheduler scheduler(small_config(48));
  EXPECT_THROW(scheduler.add_request(make_request("empty", {}, 4)), std::logic_error);
  EXPECT_THROW(scheduler.add_request(make_request("long", prompt_of(49, 1), 4)), std::logic_error);
  EXPECT_THROW(scheduler.add_request(make_request("zero", prompt_of(3, 1), 0)), std::logic_error);
  EXPECT_THROW(scheduler.add_request(make_request("no-n", prompt_of(3, 1), 4, 1, 0)), std::logic_error);
  scheduler.add_request(make_request("ok", prompt_of(3, 1), 4));
  EXPECT_TRUE(scheduler.has_request("ok"));
  EXPECT_THROW(scheduler.add_request(make_request("ok", prompt_of(3, 1), 4)), std::logic_error);
  EXPECT_EQ(scheduler.stats().num_waiting, 1);
}

// A worker that outlives its front meets a new scheduler: the new one's steps must not share ids
// with the old one's, whose samples the worker still holds and whose results may still be queued.
TEST(SchedulerLifecycle, TwoSchedulersNeverNumberTheirStepsAlike) {
  std::vector<uint64_t> first_steps;
  for (int i = 0; i < 2; ++i) {
    Scheduler scheduler(small_config(48));
    scheduler.add_request(make_request("r", prompt_of(3, 1), 4));
    auto first = scheduler.schedule_step();
    ASSERT_TRUE(first);
    scheduler.process_result(*first, std::vector<int32_t>(static_cast<size_t>(first->num_samplers()), 5), {});
    auto second = scheduler.schedule_step();
    ASSERT_TRUE(second);
    EXPECT_EQ(second->step, first->step + 1);
    first_steps.push_back(first->step);
  }
  EXPECT_NE(first_steps[0], first_steps[1]);
}

TEST(SchedulerLifecycle, ContextLengthClampsMaxNewTokens) {
  Scheduler scheduler(small_config(256));  // context 64
  FakeWorker worker(scheduler.kv_cache_slots());
  scheduler.add_request(make_request("edge", prompt_of(60, 1), 100, 1));
  RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });
  const Reply& done = log.replies.at({"edge", 0});
  EXPECT_EQ(done.output_ids.size(), 5u);  // positions 0..63 fed, the 5th output is never fed
  EXPECT_EQ(done.reason.kind, msg::FinishKind::Length);
  EXPECT_EQ(done.kv_slots.size(), 64u);
}

TEST(SchedulerLifecycle, AGivenSeedIsKeptAndAMissingOneIsDrawn) {
  Scheduler scheduler(small_config(256), /*seed_source=*/12345);
  scheduler.add_request(make_request("seeded", prompt_of(3, 1), 2, 777, 2));
  scheduler.add_request(make_request("unseeded", prompt_of(3, 1), 2));
  auto batch = scheduler.schedule_step();
  ASSERT_EQ(batch->sequences.size(), 2u);
  EXPECT_EQ(batch->sequences[0].sampling.seed, 777u);
  std::mt19937_64 expected(12345);
  EXPECT_EQ(batch->sequences[1].sampling.seed, expected());
}

TEST(SchedulerLifecycle, EosAndStopTokensFinishWithTheMatchedToken) {
  const auto prompt = prompt_of(4, 1);
  const std::vector<int32_t> expected = reference_output(prompt, 3, 10);
  SchedulerConfig config = small_config(256);
  config.eos_token_ids = {expected[4]};
  Scheduler scheduler(config);
  FakeWorker worker(scheduler.kv_cache_slots());
  Request eos = make_request("eos", prompt, 10, 3);
  eos.sampling.ignore_eos = false;
  Request stop = make_request("stop", prompt, 10, 3);
  stop.sampling.stop_token_ids = {expected[2]};
  scheduler.add_request(std::move(eos));
  scheduler.add_request(std::move(stop));
  RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });
  const Reply& by_eos = log.replies.at({"eos", 0});
  EXPECT_EQ(by_eos.output_ids, std::vector<int32_t>(expected.begin(), expected.begin() + 5));
  EXPECT_EQ(by_eos.reason.kind, msg::FinishKind::Stop);
  EXPECT_EQ(*by_eos.reason.matched_token, expected[4]);
  EXPECT_EQ(log.replies.at({"stop", 0}).output_ids.size(), 3u);
}

TEST(SchedulerLifecycle, AStopStringFromTheDetokenizerFinishesOneCompletion) {
  Scheduler scheduler(small_config(256));
  scheduler.add_request(make_request("s", prompt_of(4, 1), 10, 3, 2));
  EXPECT_FALSE(scheduler.stop_at_output("s", 5, 1, msg::FinishReason::stop_string("x")));
  auto batch = scheduler.schedule_step();
  const std::vector<CompletionRecord> first = scheduler.process_result(*batch, std::vector<int32_t>{8}, {});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].output_ids, std::vector<int32_t>{8});
  std::optional<CompletionRecord> done = scheduler.stop_at_output("s", 0, 1, msg::FinishReason::stop_string("END"));
  ASSERT_TRUE(done);
  EXPECT_EQ(*done->finish_reason->matched_text, "END");
  EXPECT_TRUE(done->output_ids.empty());  // the 8 went out with the step's record
  EXPECT_TRUE(scheduler.has_unfinished());  // completion 1 goes on
  EXPECT_EQ(scheduler.abort("s", "bye").size(), 1u);
  EXPECT_FALSE(scheduler.has_unfinished());
  scheduler.flush_cache();
  EXPECT_EQ(scheduler.stats().kv_slots_used, 0);
}

TEST(SchedulerLifecycle, AbortFreesEverySlotWhetherWaitingRunningOrInFlight) {
  for (const bool cache : {true, false}) {
    Scheduler scheduler(small_config(64, cache, 64));
    scheduler.add_request(make_request("run", prompt_of(20, 1), 8, 1));
    scheduler.add_request(make_request("inflight", prompt_of(10, 100), 8, 1));
    scheduler.add_request(make_request("wait", prompt_of(40, 200), 8, 1));  // does not fit beside them
    auto first = scheduler.schedule_step();
    scheduler.process_result(*first, std::vector<int32_t>(first->num_samplers(), 7), {});
    EXPECT_EQ(scheduler.stats().num_running, 2);
    EXPECT_EQ(scheduler.stats().num_waiting, 1);

    auto second = scheduler.schedule_step();
    const std::vector<CompletionRecord> aborted = scheduler.abort("inflight", "client left");
    ASSERT_EQ(aborted.size(), 1u);
    EXPECT_EQ(aborted[0].finish_reason->kind, msg::FinishKind::Abort);
    EXPECT_EQ(aborted[0].finish_reason->message, "client left");
    for (const CompletionRecord& record :
         scheduler.process_result(*second, std::vector<int32_t>(second->num_samplers(), 7), {}))
      EXPECT_NE(record.rid, "inflight");

    EXPECT_EQ(scheduler.abort("wait", "no").size(), 1u);
    EXPECT_EQ(scheduler.abort("run", "no").size(), 1u);
    EXPECT_TRUE(scheduler.abort("unknown", "no").empty());
    EXPECT_FALSE(scheduler.has_unfinished());
    EXPECT_EQ(scheduler.stats().num_running + scheduler.stats().num_waiting, 0);
    scheduler.flush_cache();
    EXPECT_EQ(scheduler.stats().kv_slots_used, 0) << "cache " << cache;
  }
}

TEST(SchedulerLifecycle, ATinyPoolPreemptsAndThePreemptedRequestsResumeWithTheSameOutput) {
  for (const bool cache : {true, false}) {
    Scheduler scheduler(small_config(40, cache));
    FakeWorker worker(scheduler.kv_cache_slots());
    for (int i = 0; i < 4; ++i)
      scheduler.add_request(make_request(numbered_rid(i), prompt_of(6, 10 * i), 14, 50 + i));
    RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) {
      EXPECT_LE(scheduler.stats().kv_slots_used, 40);
      return worker.run(b);
    });
    EXPECT_GT(scheduler.stats().num_preemptions, 0) << "cache " << cache;
    for (int i = 0; i < 4; ++i) {
      const Reply& done = log.replies.at({numbered_rid(i), 0});
      EXPECT_EQ(done.output_ids, reference_output(prompt_of(6, 10 * i), 50 + i, 14)) << "cache " << cache;
    }
    scheduler.flush_cache();
    EXPECT_EQ(scheduler.stats().kv_slots_used, 0);
  }
}

TEST(SchedulerLifecycle, RetractedRequestsGiveTheirKvBackAndResumeWithTheSameOutput) {
  for (const bool cache : {true, false}) {
    Scheduler scheduler(small_config(200, cache));
    FakeWorker worker(scheduler.kv_cache_slots());
    for (int i = 0; i < 4; ++i)
      scheduler.add_request(make_request(numbered_rid(i), prompt_of(6, 10 * i), 14, 50 + i));
    Replies before;  // the replies up to the retraction
    for (int step = 0; step < 5; ++step) {
      auto batch = scheduler.schedule_step();
      join(scheduler.process_result(*batch, worker.run(*batch), {}), before);
    }
    auto in_flight = scheduler.schedule_step();
    EXPECT_THROW(scheduler.retract_running(), std::logic_error);  // a step still writes their KV
    join(scheduler.process_result(*in_flight, worker.run(*in_flight), {}), before);

    EXPECT_EQ(scheduler.retract_running(), 4);
    EXPECT_EQ(scheduler.stats().num_running, 0);
    EXPECT_EQ(scheduler.stats().num_waiting, 4);
    scheduler.flush_cache();  // what the cache kept of them goes too: they are recomputed whole
    EXPECT_EQ(scheduler.stats().kv_slots_used, 0) << "cache " << cache;

    RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });
    for (int i = 0; i < 4; ++i) {
      std::vector<int32_t> output_ids = before.at({numbered_rid(i), 0}).output_ids;
      const Reply& done = log.replies.at({numbered_rid(i), 0});
      output_ids.insert(output_ids.end(), done.output_ids.begin(), done.output_ids.end());
      EXPECT_EQ(output_ids, reference_output(prompt_of(6, 10 * i), 50 + i, 14)) << "cache " << cache;
    }
    EXPECT_EQ(scheduler.stats().num_preemptions, 4);  // the retractions, one each
    // Readmitted in their admission order.
    EXPECT_EQ(log.batches.front().owners.front().rid, numbered_rid(0));
  }
}

TEST(SchedulerLifecycle, ARequestAsLongAsThePoolRunsAloneToTheEnd) {
  Scheduler scheduler(small_config(32));
  FakeWorker worker(scheduler.kv_cache_slots());
  scheduler.add_request(make_request("big", prompt_of(30, 1), 10, 4));
  scheduler.add_request(make_request("small", prompt_of(5, 1), 10, 4));
  RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });
  EXPECT_EQ(log.replies.at({"big", 0}).output_ids, reference_output(prompt_of(30, 1), 4, 3));
  EXPECT_EQ(log.replies.at({"small", 0}).output_ids, reference_output(prompt_of(5, 1), 4, 10));
}

}  // namespace
}  // namespace moe::test
