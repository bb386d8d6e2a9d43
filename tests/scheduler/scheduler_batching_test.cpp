// The batching policy: token budget, chunked prefill, decodes first, max_running_requests.
#include <gtest/gtest.h>


#include "common/error.h"

#include "fake_worker.h"
#include "scheduler_driver.h"

namespace moe::test {
namespace {

SchedulerConfig config_with(int64_t pool, int64_t chunk, int max_running = 256) {
  SchedulerConfig config;
  config.max_total_tokens = pool;
  config.chunked_prefill_size = chunk;
  config.max_running_requests = max_running;
  return config;
}

TEST(SchedulerBatching, ManyRequestsMatchTheReferenceAndRespectTheBudget) {
  for (const int64_t chunk : {1, 7, 16, 0}) {
    Scheduler scheduler(config_with(4096, chunk));
    FakeWorker worker(scheduler.kv_cache_slots());
    for (int i = 0; i < 8; ++i)
      scheduler.add_request(make_request(numbered_rid(i), prompt_of(3 + 9 * i, 100 * i), 5 + i, 77 + i));
    RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });

    ASSERT_EQ(log.replies.size(), 8u);
    for (int i = 0; i < 8; ++i) {
      const Reply& done = log.replies.at({numbered_rid(i), 0});
      EXPECT_EQ(done.output_ids, reference_output(prompt_of(3 + 9 * i, 100 * i), 77 + i, 5 + i)) << "chunk " << chunk;
      EXPECT_EQ(done.reason.kind, msg::FinishKind::Length);
    }
    if (chunk > 0) {
      for (const ScheduledBatch& batch : log.batches) EXPECT_LE(std::ssize(batch.token_ids), chunk);
    }
    scheduler.flush_cache();
    EXPECT_EQ(scheduler.stats().kv_slots_used, 0);
  }
}

TEST(SchedulerBatching, LongPromptsArePrefilledInChunksThatSampleOnlyAtTheEnd) {
  Scheduler scheduler(config_with(256, 16));
  scheduler.add_request(make_request("long", prompt_of(40, 1), 2));
  std::vector<int32_t> chunk_sizes;
  std::vector<bool> samples;
  for (int step = 0; step < 3; ++step) {
    auto batch = scheduler.schedule_step();
    ASSERT_TRUE(batch);
    ASSERT_EQ(batch->sequences.size(), 1u);
    const msg::WorkerSequence& seq = batch->sequences[0];
    chunk_sizes.push_back(seq.num_new_tokens);
    samples.push_back(seq.needs_logits);
    EXPECT_EQ(batch->positions.front(), 16 * step);
    // The worker holds the earlier chunks' slots: the step sends the new chunk's only.
    EXPECT_EQ(seq.kept_slots, 16 * step);
    EXPECT_EQ(std::ssize(seq.new_slots), seq.num_new_tokens);
    std::vector<int32_t> sampled(static_cast<size_t>(batch->num_samplers()), 5);
    scheduler.process_result(*batch, sampled, {});
  }
  EXPECT_EQ(chunk_sizes, (std::vector<int32_t>{16, 16, 8}));
  EXPECT_EQ(samples, (std::vector<bool>{false, false, true}));
}

// --max-prefill-tokens: beside a decode, a step carries at most that many prompt tokens (a
// waiting prompt's and a running one's chunk together); a step with no decode takes the whole budget.
TEST(SchedulerBatching, MaxPrefillTokensLimitsThePromptChunksBesideDecodes) {
  SchedulerConfig config = config_with(512, 64);
  config.max_prefill_tokens = 6;
  Scheduler scheduler(config);
  scheduler.add_request(make_request("a", prompt_of(40, 1), 8));
  auto first = scheduler.schedule_step();
  ASSERT_TRUE(first);
  EXPECT_EQ(std::ssize(first->token_ids), 40);  // nothing decodes yet: the step's budget alone
  scheduler.process_result(*first, std::vector<int32_t>{9}, {});

  scheduler.add_request(make_request("b", prompt_of(30, 50), 2));
  scheduler.add_request(make_request("c", prompt_of(30, 90), 2));
  std::vector<int32_t> b_chunks;
  for (int step = 0; step < 3; ++step) {
    auto mixed = scheduler.schedule_step();
    ASSERT_TRUE(mixed);
    ASSERT_EQ(mixed->owners.front().rid, "a");
    EXPECT_EQ(mixed->sequences.front().num_new_tokens, 1);
    EXPECT_EQ(std::ssize(mixed->token_ids), 1 + 6) << "step " << step;  // the decode and 6 prompt tokens
    for (size_t i = 0; i < mixed->sequences.size(); ++i)
      if (mixed->owners[i].rid == "b") b_chunks.push_back(mixed->sequences[i].num_new_tokens);
    std::vector<int32_t> sampled(static_cast<size_t>(mixed->num_samplers()), 9);
    scheduler.process_result(*mixed, sampled, {});
  }
  EXPECT_EQ(b_chunks, (std::vector<int32_t>{6, 6, 6}));  // "c" waits: "b"'s chunks take the prefill budget
}

TEST(SchedulerBatching, DecodesGoFirstAndPrefillTakesTheRestOfTheBudget) {
  Scheduler scheduler(config_with(256, 10));
  scheduler.add_request(make_request("a", prompt_of(4, 1), 8));
  auto first = scheduler.schedule_step();
  scheduler.process_result(*first, std::vector<int32_t>{9}, {});

  scheduler.add_request(make_request("b", prompt_of(30, 50), 2));
  auto mixed = scheduler.schedule_step();
  ASSERT_TRUE(mixed);
  ASSERT_EQ(mixed->sequences.size(), 2u);
  EXPECT_EQ(mixed->owners[0].rid, "a");
  EXPECT_EQ(mixed->sequences[0].num_new_tokens, 1);
  EXPECT_EQ(mixed->token_ids[0], 9);  // the token sampled last step is fed now
  EXPECT_EQ(mixed->positions[0], 4);
  EXPECT_EQ(mixed->sequences[0].sampling.step, 1u);
  EXPECT_EQ(mixed->owners[1].rid, "b");
  EXPECT_EQ(mixed->sequences[1].num_new_tokens, 9);
  EXPECT_FALSE(mixed->sequences[1].needs_logits);
}

TEST(SchedulerBatching, NeverRunsMoreThanMaxRunningRequests) {
  Scheduler scheduler(config_with(1024, 64, 2));
  FakeWorker worker(scheduler.kv_cache_slots());
  for (int i = 0; i < 5; ++i) scheduler.add_request(make_request(numbered_rid(i), prompt_of(5, 10 * i), 4, 3));
  int64_t most_running = 0;
  RunLog log = run_to_completion(scheduler, [&](const ScheduledBatch& b) {
    most_running = std::max(most_running, scheduler.stats().num_running);
    EXPECT_LE(b.sequences.size(), 2u);
    return worker.run(b);
  });
  EXPECT_EQ(most_running, 2);
  EXPECT_EQ(log.replies.size(), 5u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(log.replies.at({numbered_rid(i), 0}).output_ids, reference_output(prompt_of(5, 10 * i), 3, 4));
}

TEST(SchedulerBatching, CaptureHooksNameTheSlotsOfTheTokensRunThisStep) {
  Scheduler scheduler(config_with(256, 64));
  Request request = make_request("a", prompt_of(6, 1), 3);
  request.routing.return_routed_experts = true;
  scheduler.add_request(std::move(request));
  scheduler.add_request(make_request("b", prompt_of(3, 40), 3));
  auto batch = scheduler.schedule_step();
  ASSERT_TRUE(batch);
  const std::vector<int32_t> rows = batch->token_slots();
  ASSERT_EQ(rows.size(), 9u);
  const auto a = batch->new_token_slots(0), b = batch->new_token_slots(1);
  EXPECT_EQ(std::vector<int32_t>(rows.begin(), rows.begin() + 6), std::vector<int32_t>(a.begin(), a.end()));
  EXPECT_EQ(std::vector<int32_t>(rows.begin() + 6, rows.end()), std::vector<int32_t>(b.begin(), b.end()));
  scheduler.process_result(*batch, std::vector<int32_t>{3, 4}, {});
  auto decode = scheduler.schedule_step();
  ASSERT_EQ(decode->new_token_slots(0).size(), 1u);
  EXPECT_EQ(decode->sequences[0].kept_slots, 6);  // the 6 positions the prefill sent stay on the worker
  EXPECT_EQ(decode->sequences[0].new_slots.size(), 1u);
}

TEST(SchedulerBatching, ResultsMustMatchTheBatchInFlight) {
  Scheduler scheduler(config_with(256, 64));
  scheduler.add_request(make_request("a", prompt_of(3, 1), 3));
  auto batch = scheduler.schedule_step();
  EXPECT_THROW(scheduler.schedule_step(), std::logic_error);
  EXPECT_THROW(scheduler.process_result(*batch, std::vector<int32_t>{1, 2}, {}), Error);
  scheduler.process_result(*batch, std::vector<int32_t>{1}, {});
  EXPECT_THROW(scheduler.process_result(*batch, std::vector<int32_t>{1}, {}), std::logic_error);
}

}  // namespace
}  // namespace moe::test

namespace moe::test {
namespace {

// What the worker's sampler is told per step: the generated tokens when a penalty needs them, and
// the stop tokens it may not draw before min_new_tokens (eos only while it would stop the request).
TEST(SchedulerBatching, TheSamplerGetsTheHistoryAndTheMinTokensBan) {
  SchedulerConfig config = config_with(256, 64);
  config.eos_token_ids = {9};
  Scheduler scheduler(config);
  Request penalized = make_request("p", prompt_of(4, 1), 6, 3);
  penalized.sampling.frequency_penalty = 0.5f;
  penalized.sampling.min_new_tokens = 2;
  penalized.sampling.stop_token_ids = {11};
  penalized.sampling.ignore_eos = false;
  penalized.return_logprob = true;
  penalized.top_logprobs_num = 4;
  scheduler.add_request(penalized);
  Request plain = make_request("q", prompt_of(4, 50), 6, 4);
  plain.sampling.min_new_tokens = 1;  // ignore_eos (make_request's): eos would not stop it
  scheduler.add_request(plain);
  const std::vector<std::vector<int32_t>> expected_history = {{}, {5}, {5, 6}};
  for (int step = 0; step < 3; ++step) {
    auto batch = scheduler.schedule_step();
    ASSERT_TRUE(batch);
    ASSERT_EQ(batch->sequences.size(), 2u);
    const msg::TokenSampling& p = batch->sequences[0].sampling;
    const msg::TokenSampling& q = batch->sequences[1].sampling;
    EXPECT_EQ(p.generated_ids, expected_history[step]);
    const std::vector<int32_t> banned = step < 2 ? std::vector<int32_t>{11, 9} : std::vector<int32_t>{};
    EXPECT_EQ(p.suppressed_ids, banned);
    EXPECT_EQ(p.top_logprobs, 4);
    EXPECT_TRUE(q.generated_ids.empty());  // no penalty: no history sent
    EXPECT_EQ(q.suppressed_ids, std::vector<int32_t>{});
    EXPECT_EQ(q.top_logprobs, 0);
    scheduler.process_result(*batch, std::vector<int32_t>{5 + step, 7}, {});
  }
}

}  // namespace
}  // namespace moe::test
