// The serving pipeline's logic end to end (scheduler service -> worker -> detokenizer, no sockets):
// every golden case's greedy ids and routed-experts rows come back exact however the work is cut —
// batched, chunked, from the prefix cache, after preemption, as n completions, streamed.
#include <gtest/gtest.h>

#include "golden_serving_test.h"
#include "tokenizer/tokenizer.h"

namespace moe::testing {
namespace {

using ServingRouting = GoldenServingTest;

TEST_F(ServingRouting, AllCasesBatchedWithSentinelFilledHostCache) {
  auto h = make_pipeline({});
  h->service().fill_routing_rows(-7);
  const auto joined = join_outputs(h->run(all_cases("b")));
  EXPECT_TRUE(h->errors().empty());
  expect_all_golden(joined, "b");
  for (const auto& [key, out] : joined) EXPECT_EQ(std::count(out.rows.begin(), out.rows.end(), -7), 0);
}

TEST_F(ServingRouting, ChunkedPrefillSizes1And7And16) {
  for (int64_t chunk : {1, 7, 16}) {
    HarnessOptions options;
    options.settings.chunked_prefill_size = chunk;
    auto h = make_pipeline(options);
    expect_all_golden(join_outputs(h->run(all_cases("c"))), "c");
  }
}

TEST_F(ServingRouting, PrefixCacheHitReturnsRealRowsForCachedTokens) {
  auto h = make_pipeline({});
  expect_prefix_hits_golden(*h);
}

TEST_F(ServingRouting, PreemptionKeepsOutputsAndRowsExact) {
  HarnessOptions options;
  options.settings.max_total_tokens = 200;  // far less than 8 prompts + 24 tokens each
  auto h = make_pipeline(options);
  const auto joined = join_outputs(h->run(all_cases("p")));
  EXPECT_GT(h->service().stats().num_preemptions, 0);
  expect_all_golden(joined, "p");
}

TEST_F(ServingRouting, ThreeCompletionsShareThePromptRows) {
  auto h = make_pipeline({});
  auto requests = all_cases("n");
  for (auto& r : requests) r.sampling.n = 3;
  const auto joined = join_outputs(h->run(requests));
  for (int32_t index = 0; index < 3; ++index) expect_all_golden(joined, "n", index);
}

TEST_F(ServingRouting, StreamedChunksCarryTheirRowsAndAddUpToTheWhole) {
  auto h = make_pipeline({});
  auto requests = all_cases("s");
  for (auto& r : requests) r.stream = true;
  const auto joined = join_outputs(h->run(requests));
  for (const auto& [key, out] : joined) EXPECT_EQ(out.chunks, golden_.max_new_tokens);
  expect_all_golden(joined, "s");
}

TEST_F(ServingRouting, RoutingRequestedWithoutTheServerFlagIsAClearError) {
  HarnessOptions options;
  options.settings.enable_return_routed_experts = false;
  options.settings.enable_return_router_weights = false;
  auto h = make_pipeline(options);
  const auto outputs = h->run({greedy_request("x", golden_.cases[0].prompt_ids, 4)});
  EXPECT_TRUE(outputs.empty());
  ASSERT_EQ(h->errors().size(), 1u);
  EXPECT_NE(h->errors()[0].message.find("--enable-return-routed-experts"), std::string::npos);
}

TEST_F(ServingRouting, RouterWeightsNeedTheirOwnServerFlagAndCostNothingWithoutIt) {
  HarnessOptions options;
  options.settings.enable_return_router_weights = false;
  auto h = make_pipeline(options);
  const int L = golden_.num_moe_layers, K = golden_.top_k;
  EXPECT_EQ(h->service().host_cache_bytes(), h->service().kv_cache_slots() * L * K * int64_t{sizeof(int16_t)});
  msg::GenerateRequest with_weights = greedy_request("w", golden_.cases[0].prompt_ids, 4);
  with_weights.routing.return_router_weights = true;
  EXPECT_TRUE(h->run({with_weights}).empty());
  ASSERT_EQ(h->errors().size(), 1u);
  EXPECT_NE(h->errors()[0].message.find("--enable-return-router-weights"), std::string::npos);
  // The refusal costs nothing else: the ids alone are still served, golden.
  expect_all_golden(join_outputs(h->run(all_cases("ids"))), "ids");

  auto with_flag = make_pipeline({});
  EXPECT_EQ(with_flag->service().host_cache_bytes(),
            with_flag->service().kv_cache_slots() * L * K * int64_t{sizeof(int16_t) + sizeof(float)});
}

// The output tokens a stop string made of case i's first output tokens' text keeps: the smallest
// k >= half the output whose token adds whole characters (so the text of the first k tokens is
// matched first at token k); 0 when no token qualifies. `stop` receives the text.
size_t stop_string_at(const tokenizer::Tokenizer& tok, const std::vector<int32_t>& out, std::string& stop) {
  for (size_t k = out.size() / 2; k < out.size(); ++k) {
    const std::string before = tok.decode({out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k) - 1}, true);
    stop = tok.decode({out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k)}, true);
    if (stop.size() > before.size() && stop.find("\xEF\xBF\xBD") == std::string::npos) return k;
  }
  return 0;
}

TEST_F(ServingRouting, AStopStringReplyHasTheRowsOfTheTokensItKeptWithOrWithoutIncludeLast) {
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer");
  for (const bool include_last : {false, true})
    for (const bool stream : {false, true}) {
      SCOPED_TRACE(std::string(include_last ? "include_last" : "P+G-1") + (stream ? ", streamed" : ""));
      auto h = make_pipeline({});
      std::vector<msg::GenerateRequest> requests = all_cases("s");
      std::vector<size_t> kept(requests.size());
      for (size_t i = 0; i < requests.size(); ++i) {
        std::string stop;
        kept[i] = stop_string_at(tok, golden_.cases[i].output_ids, stop);
        ASSERT_GT(kept[i], 0u) << "case " << i << " has no usable stop string";
        requests[i].sampling.stop = {stop};
        requests[i].routing.include_last = include_last;
        requests[i].stream = stream;
      }
      const auto joined = join_outputs(h->run(requests));
      EXPECT_TRUE(h->errors().empty());
      for (size_t i = 0; i < requests.size(); ++i) {
        SCOPED_TRACE("case " + std::to_string(i));
        expect_stopped_golden(joined.at({"s" + std::to_string(i), 0}), i, kept[i], include_last);
      }
      // Nothing is left behind: every slot but the prefix cache's is free again.
      h->service().flush_cache();
      EXPECT_EQ(h->service().stats().kv_slots_used, 0);
    }
}

}  // namespace
}  // namespace moe::testing
