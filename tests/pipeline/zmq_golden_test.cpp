// Every golden case sent through the ZeroMQ client API of a running engine (real tcp socket, the
// four actors as threads) gives transformers' greedy ids and P+G-1 routed-experts rows, however
// the engine cuts the work: one at a time, all at once, chunked prefill, prefix cache on and off,
// a KV pool small enough to force preemption, streamed.
#include <gtest/gtest.h>

#include "moe/client.h"
#include "pipeline_harness.h"

namespace moe::testing {
namespace {

class ZmqGolden : public ::testing::Test {
 protected:
  void SetUp() override { golden_ = load_golden("qwen3-moe-tiny"); }

  std::vector<JoinedReply> all_cases_at_once(Client& client, const std::string& prefix, bool stream = false) {
    return send_all_cases_at_once(client, golden_, prefix, stream);
  }

  // Every case twice, both times golden; returns the second run's replies.
  std::vector<JoinedReply> golden_twice(Client& client) {
    expect_all_golden(golden_, all_cases_at_once(client, "first"));
    auto again = all_cases_at_once(client, "again");
    expect_all_golden(golden_, again);
    return again;
  }

  // Every case at once on a new engine started with `options`, golden, then every slot free;
  // returns the scheduler's counters at the end.
  SchedulerStats all_cases_at_once_on_a_fresh_engine(const actors::ServeOptions& options) {
    actors::EngineRuntime runtime(options);
    Client client(runtime.client_endpoint());
    expect_all_golden(golden_, all_cases_at_once(client, "fresh"));
    expect_all_slots_free(runtime);
    return runtime.scheduler_stats();
  }

  // Nothing runs any more and every KV slot not held by the prefix cache is free.
  static void expect_all_slots_free(actors::EngineRuntime& runtime) {
    const SchedulerStats stats = wait_until_idle(runtime);
    EXPECT_EQ(stats.num_running + stats.num_waiting, 0);
    EXPECT_EQ(stats.kv_slots_used, stats.radix_cached_tokens);
  }

  Golden golden_;
};

TEST_F(ZmqGolden, EveryCaseOneAtATimeThenEightAtOnce) {
  actors::EngineRuntime runtime(tiny_serve_options());
  Client client(runtime.client_endpoint());
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const auto outputs = client.generate(golden_request(golden_, golden_.cases[i], "one" + std::to_string(i)));
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0].rid, "one" + std::to_string(i));
    expect_golden_reply(golden_, golden_.cases[i], join_reply(outputs));
  }
  expect_all_golden(golden_, all_cases_at_once(client, "eight"));
  expect_all_slots_free(runtime);
}

TEST_F(ZmqGolden, ChunkedPrefillOf16Tokens) {
  actors::ServeOptions options = tiny_serve_options();
  options.chunked_prefill_size = 16;
  all_cases_at_once_on_a_fresh_engine(options);
}

TEST_F(ZmqGolden, PrefixCacheOnServesRepeatedPromptsFromTheCacheWithRealRows) {
  actors::EngineRuntime runtime(tiny_serve_options());
  Client client(runtime.client_endpoint());
  const auto again = golden_twice(client);
  for (size_t i = 0; i < again.size(); ++i)  // all of each prompt but its last token was cached
    EXPECT_EQ(again[i].cached_tokens, static_cast<int32_t>(golden_.cases[i].prompt_ids.size()) - 1) << "case " << i;
  EXPECT_GT(runtime.scheduler_stats().cache_hit_tokens, 0);
  expect_all_slots_free(runtime);
}

TEST_F(ZmqGolden, PrefixCacheOffRecomputesEverything) {
  actors::ServeOptions options = tiny_serve_options();
  options.disable_radix_cache = true;
  actors::EngineRuntime runtime(options);
  Client client(runtime.client_endpoint());
  const auto again = golden_twice(client);
  for (const JoinedReply& reply : again) EXPECT_EQ(reply.cached_tokens, 0);
  const SchedulerStats stats = wait_until_idle(runtime);
  EXPECT_EQ(stats.cache_hit_tokens, 0);
  EXPECT_EQ(stats.kv_slots_used, 0);
}

TEST_F(ZmqGolden, KvPoolTooSmallForAllPreemptsAndStaysExact) {
  actors::ServeOptions options = tiny_serve_options();
  // The eight cases need 247 prompt + 192 output slots at once; 200 hold the longest (144) alone.
  options.max_total_tokens = 200;
  EXPECT_GT(all_cases_at_once_on_a_fresh_engine(options).num_preemptions, 0);
}

TEST_F(ZmqGolden, StreamedChunksAddUpToTheWholeReply) {
  actors::EngineRuntime runtime(tiny_serve_options());
  Client client(runtime.client_endpoint());
  const auto replies = all_cases_at_once(client, "stream", /*stream=*/true);
  for (const JoinedReply& reply : replies) EXPECT_EQ(reply.chunks, golden_.max_new_tokens);
  expect_all_golden(golden_, replies);
  // The blocking streaming call sees the same chunks.
  std::vector<msg::TextOutput> chunks;
  client.generate_stream(golden_request(golden_, golden_.cases[2], "blocking"),
                         [&](const msg::TextOutput& chunk) { chunks.push_back(chunk); });
  expect_golden_reply(golden_, golden_.cases[2], join_reply(chunks));
}

}  // namespace
}  // namespace moe::testing
