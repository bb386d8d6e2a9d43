// Routing rows do not depend on how the work is cut or how they are shipped: expert-parallel
// shards, a prefix-cache hit on half a prompt, preemption mid-decode, include_last, every dtype,
// start_len, raw or base64, router weights on and off.
#include <gtest/gtest.h>

#include "golden_serving_test.h"
#include "moe/enum_names.h"

namespace moe::testing {
namespace {

using ServingInvariance = GoldenServingTest;

TEST_F(ServingInvariance, FourExpertParallelShardsGiveTheSameRows) {
  HarnessOptions options;
  options.ep_size = 4;
  auto h = make_pipeline(options);
  expect_all_golden(join_outputs(h->run(all_cases("ep"))), "ep");
}

TEST_F(ServingInvariance, PrefixCacheHitOnTheFirstHalfOfThePrompt) {
  auto h = make_pipeline({});
  h->service().fill_routing_rows(-7);
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    const std::vector<int32_t>& prompt = golden_.cases[i].prompt_ids;
    if (prompt.size() < 2) continue;
    SCOPED_TRACE("case " + std::to_string(i));
    const size_t half = prompt.size() / 2;
    const std::vector<int32_t> first_half(prompt.begin(), prompt.begin() + half);
    const auto halves = join_outputs(h->run({greedy_request("half" + std::to_string(i), first_half, 1)}));
    for (const auto& e : h->errors()) ADD_FAILURE() << e.message;
    const JoinedOutput& half_out = halves.at({"half" + std::to_string(i), 0});
    EXPECT_EQ(half_out.num_rows, static_cast<int64_t>(half));  // P rows + 1 token - 1
    expect_routing_matches_golden(golden_, golden_.cases[i], half_out.rows, static_cast<int64_t>(half));

    const auto fulls = join_outputs(h->run({greedy_request("full" + std::to_string(i), prompt, golden_.max_new_tokens)}));
    const JoinedOutput& full = fulls.at({"full" + std::to_string(i), 0});
    EXPECT_EQ(full.cached_tokens, static_cast<int32_t>(half));
    EXPECT_EQ(std::count(full.rows.begin(), full.rows.end(), -7), 0);
    expect_golden(full, i);
  }
  EXPECT_TRUE(h->errors().empty());
}

// Two requests whose prefills fit the pool but whose decodes do not: the later one (case 3) is
// preempted after it has generated tokens, recomputed, and still returns exactly its golden rows.
TEST_F(ServingInvariance, RequestPreemptedMidDecodeKeepsItsRows) {
  for (const bool include_last : {false, true}) {
    SCOPED_TRACE(include_last ? "include_last" : "plain");
    HarnessOptions options;
    const size_t first = 7, second = 3;
    options.settings.max_total_tokens =
        static_cast<int64_t>(golden_.cases[first].prompt_ids.size() + golden_.cases[second].prompt_ids.size()) + 10;
    auto h = make_pipeline(options);
    auto a = greedy_request("a", golden_.cases[first].prompt_ids, golden_.max_new_tokens);
    auto b = greedy_request("b", golden_.cases[second].prompt_ids, golden_.max_new_tokens);
    a.routing.include_last = b.routing.include_last = include_last;
    const auto joined = join_outputs(h->run({a, b}));
    EXPECT_EQ(h->service().stats().num_preemptions, 1);
    expect_golden(joined.at({"b", 0}), second, include_last);
    expect_golden(joined.at({"a", 0}), first, include_last);
  }
}

TEST_F(ServingInvariance, IncludeLastReturnsTheLastTokensRowBatchedChunkedAndStreamed) {
  for (const int64_t chunk : {0, 7}) {
    for (const bool stream : {false, true}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + (stream ? " streamed" : ""));
      HarnessOptions options;
      if (chunk > 0) options.settings.chunked_prefill_size = chunk;
      auto h = make_pipeline(options);
      h->service().fill_routing_rows(-7);
      auto requests = all_cases("l");
      for (auto& r : requests) {
        r.routing.include_last = true;
        r.stream = stream;
      }
      auto plain = all_cases("p");  // in the same batch, without include_last
      requests.insert(requests.end(), plain.begin(), plain.end());
      const auto joined = join_outputs(h->run(requests));
      EXPECT_TRUE(h->errors().empty());
      expect_all_golden(joined, "l", 0, /*include_last=*/true);
      expect_all_golden(joined, "p", 0, /*include_last=*/false);
      for (const auto& [key, out] : joined) EXPECT_EQ(std::count(out.rows.begin(), out.rows.end(), -7), 0);
    }
  }
}

TEST_F(ServingInvariance, IncludeLastWithThreeCompletionsGivesEachItsLastRow) {
  auto h = make_pipeline({});
  auto requests = all_cases("n");
  for (auto& r : requests) {
    r.sampling.n = 3;
    r.routing.include_last = true;
  }
  const auto joined = join_outputs(h->run(requests));
  for (int32_t index = 0; index < 3; ++index) expect_all_golden(joined, "n", index, true);
}

TEST_F(ServingInvariance, EveryDtypeRawAndBase64DecodesToTheGoldenRows) {
  struct Expected {
    std::string asked, returned;
    size_t bytes_per_id;
  };
  const std::vector<Expected> dtypes = {{"int32", "int32", 4}, {"int16", "int16", 2}, {"uint8", "uint8", 1},
                                        {"auto", "uint8", 1}};  // the tiny model has 16 experts
  auto h = make_pipeline({});
  const size_t c = 7;
  for (const Expected& dtype : dtypes) {
    for (const bool raw : {true, false}) {
      SCOPED_TRACE(dtype.asked + (raw ? " raw" : " base64"));
      auto r = greedy_request("d", golden_.cases[c].prompt_ids, golden_.max_new_tokens);
      r.routing.dtype = *msg::enum_named<msg::RoutedExpertsDtype>(dtype.asked);
      r.routing.raw = raw;
      const auto outputs = h->run({r});
      ASSERT_EQ(outputs.size(), 1u);
      const msg::EncodedArray& array = *outputs[0].routed_experts;
      EXPECT_EQ(array.dtype, dtype.returned);
      EXPECT_EQ(array.raw, raw);
      const int64_t rows = static_cast<int64_t>(golden_.cases[c].prompt_ids.size()) + golden_.max_new_tokens - 1;
      EXPECT_EQ(array.shape, (std::vector<int64_t>{rows, golden_.num_moe_layers, golden_.top_k}));
      const size_t bytes = static_cast<size_t>(rows * golden_.num_moe_layers * golden_.top_k) * dtype.bytes_per_id;
      EXPECT_EQ(array.data.size(), raw ? bytes : (bytes + 2) / 3 * 4);  // base64: 4 chars per 3 bytes
      expect_golden(join_outputs(outputs).at({"d", 0}), c);
    }
  }
  EXPECT_TRUE(h->errors().empty());
}

TEST_F(ServingInvariance, StartLenSkipsTheFirstRowsWholeOrStreamed) {
  auto h = make_pipeline({});
  const size_t c = 3;
  const int32_t start = 5;
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    auto r = greedy_request("s", golden_.cases[c].prompt_ids, golden_.max_new_tokens);
    r.routing.start_len = start;
    r.stream = stream;
    const JoinedOutput out = join_outputs(h->run({r})).at({"s", 0});
    const std::vector<int32_t> all = golden_rows(c, false);
    const size_t row_size = static_cast<size_t>(golden_.num_moe_layers) * golden_.top_k;
    EXPECT_EQ(out.num_rows, static_cast<int64_t>(all.size() / row_size) - start);
    EXPECT_EQ(out.rows, std::vector<int32_t>(all.begin() + start * row_size, all.end()));
  }
}

TEST_F(ServingInvariance, RouterWeightsMatchTheGoldenWeightsWhenAskedAndAreAbsentOtherwise) {
  auto h = make_pipeline({});
  const size_t c = 7;
  const GoldenCase& golden_case = golden_.cases[c];
  for (const bool weights : {true, false}) {
    SCOPED_TRACE(weights ? "weights on" : "weights off");
    auto r = greedy_request("w", golden_case.prompt_ids, golden_.max_new_tokens);
    r.routing.return_router_weights = weights;
    const auto outputs = h->run({r});
    ASSERT_EQ(outputs.size(), 1u);
    ASSERT_EQ(outputs[0].router_weights.has_value(), weights);
    if (!weights) continue;
    EXPECT_EQ(outputs[0].router_weights->dtype, "float32");
    EXPECT_EQ(outputs[0].router_weights->shape, outputs[0].routed_experts->shape);
    const JoinedOutput out = join_outputs(outputs).at({"w", 0});
    const int L = golden_.num_moe_layers, K = golden_.top_k;
    ASSERT_EQ(out.weights.size(), static_cast<size_t>(out.num_rows * L * K));
    for (int64_t pos = 0; pos < out.num_rows; ++pos)
      for (int l = 0; l < L; ++l)
        for (int k = 0; k < K; ++k)
          EXPECT_NEAR(out.weights[(pos * L + l) * K + k], golden_case.routed_weights[pos][l][k], 1e-4)
              << "position " << pos << " layer " << l << " rank " << k;
  }
}

}  // namespace
}  // namespace moe::testing
