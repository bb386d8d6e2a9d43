// The scheduler with the radix prefix cache: hits, the recomputed last token, n > 1 sharing, off.
#include <gtest/gtest.h>

#include <set>

#include "fake_worker.h"
#include "scheduler_driver.h"

namespace moe::test {
namespace {

SchedulerConfig cache_config(bool enabled) {
  SchedulerConfig config;
  config.max_total_tokens = 512;
  config.chunked_prefill_size = 8;
  config.enable_radix_cache = enabled;
  return config;
}

struct PrefixCacheRun : ::testing::Test {
  RunLog run(Scheduler& scheduler, FakeWorker& worker) {
    return run_to_completion(scheduler, [&](const ScheduledBatch& b) { return worker.run(b); });
  }
};

TEST_F(PrefixCacheRun, ARepeatedPromptReusesAllButItsLastToken) {
  Scheduler scheduler(cache_config(true));
  FakeWorker worker(scheduler.kv_cache_slots());
  const auto prompt = prompt_of(20, 1);
  scheduler.add_request(make_request("first", prompt, 6, 5));
  const Reply first = run(scheduler, worker).replies.at({"first", 0});
  EXPECT_EQ(first.cached_tokens, 0);
  EXPECT_EQ(scheduler.stats().radix_cached_tokens, 20 + 6 - 1);

  scheduler.add_request(make_request("again", prompt, 6, 5));
  RunLog second = run(scheduler, worker);
  const Reply& again = second.replies.at({"again", 0});
  EXPECT_EQ(again.cached_tokens, 19);
  EXPECT_EQ(again.output_ids, first.output_ids);
  EXPECT_EQ(std::ssize(second.batches.front().token_ids), 1);  // only the last prompt token
  EXPECT_EQ(std::vector<int32_t>(again.kv_slots.begin(), again.kv_slots.begin() + 19),
            std::vector<int32_t>(first.kv_slots.begin(), first.kv_slots.begin() + 19));

  // A prompt that continues the first conversation hits its prompt and generated tokens.
  std::vector<int32_t> follow_up = prompt;
  follow_up.insert(follow_up.end(), first.output_ids.begin(), first.output_ids.end());
  follow_up.push_back(999);
  scheduler.add_request(make_request("follow", follow_up, 4, 9));
  const Reply follow = run(scheduler, worker).replies.at({"follow", 0});
  EXPECT_EQ(follow.cached_tokens, 25);
  EXPECT_EQ(follow.output_ids, reference_output(follow_up, 9, 4));

  EXPECT_EQ(scheduler.stats().cache_hit_tokens, 19 + 25);
  EXPECT_EQ(scheduler.stats().kv_slots_used, scheduler.stats().radix_cached_tokens);
  scheduler.flush_cache();
  EXPECT_EQ(scheduler.stats().kv_slots_used, 0);
}

TEST_F(PrefixCacheRun, DisabledCacheAllocatesEveryRequestFresh) {
  Scheduler scheduler(cache_config(false));
  FakeWorker worker(scheduler.kv_cache_slots());
  const auto prompt = prompt_of(20, 1);
  scheduler.add_request(make_request("first", prompt, 6, 5));
  run(scheduler, worker);
  EXPECT_EQ(scheduler.stats().kv_slots_used, 0);
  scheduler.add_request(make_request("again", prompt, 6, 5));
  const Reply again = run(scheduler, worker).replies.at({"again", 0});
  EXPECT_EQ(again.cached_tokens, 0);
  EXPECT_EQ(again.output_ids, reference_output(prompt, 5, 6));
  EXPECT_EQ(scheduler.stats().radix_cached_tokens, 0);
  EXPECT_EQ(scheduler.stats().kv_slots_used, 0);
}

TEST_F(PrefixCacheRun, CompletionsOfOneRequestShareThePromptKv) {
  Scheduler scheduler(cache_config(true));
  FakeWorker worker(scheduler.kv_cache_slots());
  const auto prompt = prompt_of(20, 1);
  scheduler.add_request(make_request("multi", prompt, 5, 100, 3));
  EXPECT_EQ(scheduler.stats().num_waiting, 3);
  RunLog log = run(scheduler, worker);
  ASSERT_EQ(log.replies.size(), 3u);
  std::set<std::vector<int32_t>> distinct;
  for (int i = 0; i < 3; ++i) {
    const Reply& done = log.replies.at({"multi", i});
    EXPECT_EQ(done.output_ids, reference_output(prompt, 100 + i, 5));
    EXPECT_EQ(done.cached_tokens, i == 0 ? 0 : 19);
    // Shared prompt KV: the same slots for every position but the recomputed last one.
    const Reply& first = log.replies.at({"multi", 0});
    EXPECT_EQ(std::vector<int32_t>(done.kv_slots.begin(), done.kv_slots.begin() + 19),
              std::vector<int32_t>(first.kv_slots.begin(), first.kv_slots.begin() + 19));
    distinct.insert(done.output_ids);
  }
  EXPECT_EQ(distinct.size(), 3u);  // different seeds, different completions
}

}  // namespace
}  // namespace moe::test
