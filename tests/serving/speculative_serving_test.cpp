// Speculative decoding (NGRAM drafts, tree verify) through the engine step: greedy replies keep
// exactly the golden ids and routing rows however speculation is mixed in — alone, batched with
// requests that do not speculate, from the prefix cache, after preemption, with include_last,
// start_len, streaming, n > 1 and stop conditions that cut a verify's accepted tokens — and
// sampling at temperature 1 draws what non-speculative decoding draws.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>

#include "common/error.h"
#include "speculative_checks.h"

namespace moe::testing {
namespace {

EngineSettings speculative_settings(EngineSettings s = HarnessOptions{}.settings) {
  s.speculative_algorithm = "NGRAM";
  s.speculative_num_steps = 4;
  s.speculative_eagle_topk = 2;
  s.speculative_num_draft_tokens = 8;
  return s;
}

std::unique_ptr<EngineCore> speculating(const std::string& fixture = "qwen3-moe-tiny",
                                        EngineSettings settings = speculative_settings()) {
  HarnessOptions options;
  options.fixture = fixture;
  options.settings = std::move(settings);
  return make_pipeline(options);
}

class SpeculativeGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SpeculativeGolden, EveryCaseAloneAndAllBatchedGiveGoldenIdsAndRows) {
  expect_drafts_accepted(
      *expect_every_case_golden_alone_and_batched(GetParam(), [&] { return speculating(GetParam()); }));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SpeculativeGolden, ::testing::ValuesIn(kGoldenFixtures), fixture_test_name);

using SpeculativeServing = SpeculativeServingTest;

TEST_F(SpeculativeServing, SpeculatingAndNonSpeculatingRequestsShareBatches) {
  auto engine = speculating();
  expect_mixed_with_plain_golden(*engine);
  expect_drafts_accepted(*engine);
}

// Without the prefix cache every slot returns to the pool when its request ends: no rejected
// draft's slot is lost and no accepted one is freed twice (the pool throws on that).
TEST_F(SpeculativeServing, RejectedDraftSlotsGoBackToThePool) {
  EngineSettings settings = speculative_settings();
  settings.disable_radix_cache = true;
  auto engine = speculating("qwen3-moe-tiny", settings);
  expect_all_golden(join_outputs(engine->run(all_cases("k"))), "k");
  expect_drafts_accepted(*engine);
  EXPECT_EQ(engine->service().stats().kv_slots_used, 0);
}

TEST_F(SpeculativeServing, RequestsThatOptOutNeverSpeculate) {
  auto engine = speculating();
  std::vector<msg::GenerateRequest> requests = all_cases("plain");
  for (msg::GenerateRequest& r : requests) r.speculative = false;
  expect_all_golden(join_outputs(engine->run(requests)), "plain");
  EXPECT_EQ(engine->service().stats().verify_passes, 0);
}

TEST_F(SpeculativeServing, PrefixCacheHitsReturnGoldenRows) {
  auto engine = speculating();
  expect_prefix_hits_golden(*engine);
  expect_drafts_accepted(*engine);
}

TEST_F(SpeculativeServing, PreemptionKeepsOutputsAndRowsExact) {
  EngineSettings settings = speculative_settings();
  settings.max_total_tokens = 200;  // far less than 8 prompts + 24 tokens each
  auto engine = speculating("qwen3-moe-tiny", settings);
  const auto joined = join_outputs(engine->run(all_cases("p")));
  EXPECT_TRUE(engine->errors().empty());
  EXPECT_GT(engine->service().stats().num_preemptions, 0);
  expect_all_golden(joined, "p");
  expect_drafts_accepted(*engine);
}

TEST_F(SpeculativeServing, IncludeLastStreamingAndThreeCompletionsKeepTheirRows) {
  auto engine = speculating();
  auto last = all_cases("last");
  for (auto& r : last) r.routing.include_last = true;
  auto streamed = all_cases("stream");
  for (auto& r : streamed) r.stream = true;
  auto three = all_cases("n");
  for (auto& r : three) r.sampling.n = 3;
  std::vector<msg::GenerateRequest> requests = last;
  requests.insert(requests.end(), streamed.begin(), streamed.end());
  requests.insert(requests.end(), three.begin(), three.end());
  const auto joined = join_outputs(engine->run(requests));
  EXPECT_TRUE(engine->errors().empty());
  expect_all_golden(joined, "last", 0, true);
  expect_all_golden(joined, "stream");
  for (int32_t index = 0; index < 3; ++index) expect_all_golden(joined, "n", index);
  expect_drafts_accepted(*engine);
}

TEST_F(SpeculativeServing, StartLenLeavesOutTheFirstRows) {
  auto engine = speculating();
  auto requests = all_cases("s");
  for (auto& r : requests) r.routing.start_len = 3;
  const auto joined = join_outputs(engine->run(requests));
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    const JoinedOutput& out = joined.at({"s" + std::to_string(i), 0});
    const std::vector<int32_t> rows = golden_rows(i, false);
    const size_t skip = 3 * static_cast<size_t>(golden_.num_moe_layers * golden_.top_k);
    EXPECT_EQ(out.num_rows, static_cast<int64_t>(rows.size() - skip) / (golden_.num_moe_layers * golden_.top_k));
    EXPECT_EQ(out.ids, golden_.cases[i].output_ids);
  }
}

// A stop token met among a verify's accepted drafts ends the reply there: later accepted tokens
// are dropped, and the rows are those of the tokens kept.
TEST_F(SpeculativeServing, AStopTokenInsideAcceptedDraftsEndsTheReplyThere) {
  for (const bool include_last : {false, true}) {
    auto engine = speculating();
    std::vector<msg::GenerateRequest> requests = all_cases("stop");
    std::vector<size_t> kept(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      const std::vector<int32_t>& out = golden_.cases[i].output_ids;
      const int32_t stop = out[out.size() * 2 / 3];
      kept[i] = static_cast<size_t>(std::find(out.begin(), out.end(), stop) - out.begin()) + 1;
      requests[i].sampling.stop_token_ids = {stop};
      requests[i].routing.include_last = include_last;
    }
    const auto joined = join_outputs(engine->run(requests));
    EXPECT_TRUE(engine->errors().empty());
    for (size_t i = 0; i < requests.size(); ++i) {
      SCOPED_TRACE("case " + std::to_string(i) + (include_last ? " include_last" : ""));
      expect_stopped_golden(joined.at({"stop" + std::to_string(i), 0}), i, kept[i], include_last);
    }
  }
}

// Temperature 1 (top_k 4): the first sampled positions of every case over many seeds.
std::map<std::pair<size_t, int32_t>, int> first_token_counts(EngineCore& engine, const Golden& golden,
                                                              uint64_t first_seed, int seeds, size_t positions,
                                                              std::vector<std::vector<int32_t>>* outputs,
                                                              int max_new_tokens = 8) {
  std::map<std::pair<size_t, int32_t>, int> counts;
  for (int s = 0; s < seeds; ++s) {
    std::vector<msg::GenerateRequest> requests;
    for (size_t i = 0; i < golden.cases.size(); ++i) {
      // The prompt twice: n-gram drafts (its second half again) exist from the first position on.
      std::vector<int32_t> prompt = golden.cases[i].prompt_ids;
      prompt.insert(prompt.end(), golden.cases[i].prompt_ids.begin(), golden.cases[i].prompt_ids.end());
      msg::GenerateRequest r = greedy_request("t" + std::to_string(i), prompt, max_new_tokens);
      r.sampling.temperature = 1.0f;
      // Draws among the 4 likeliest tokens repeat within a reply, so n-gram drafts exist and are
      // accepted often enough to matter (unfiltered draws from a random model almost never repeat).
      r.sampling.top_k = 4;
      r.sampling.seed = first_seed + static_cast<uint64_t>(s);
      r.routing.return_routed_experts = false;
      requests.push_back(r);
    }
    const auto joined = join_outputs(engine.run(requests));
    for (size_t i = 0; i < golden.cases.size(); ++i) {
      const std::vector<int32_t>& ids = joined.at({"t" + std::to_string(i), 0}).ids;
      if (outputs) outputs->push_back(ids);
      for (size_t p = 0; p < positions && p < ids.size(); ++p) ++counts[{p * 1000 + i, ids[p]}];
    }
  }
  return counts;
}

// Same seeds: speculative sampling draws each token as non-speculative sampling does, so the
// replies are the same token for token.
TEST_F(SpeculativeServing, TemperatureOneWithTheSameSeedsDrawsTheSameTokens) {
  auto plain = make_pipeline({});
  auto spec = speculating();
  std::vector<std::vector<int32_t>> plain_out, spec_out;
  first_token_counts(*plain, golden_, 100, 12, 24, &plain_out, 24);
  first_token_counts(*spec, golden_, 100, 12, 24, &spec_out, 24);
  EXPECT_EQ(plain_out, spec_out);
  const SchedulerStats stats = spec->service().stats();
  EXPECT_GT(stats.accepted_drafts, 0);
  std::cout << "temperature 1: " << stats.verify_passes << " verifies, " << stats.accepted_drafts << " of "
            << stats.draft_tokens << " drafts accepted\n";
}

// Other seeds: the empirical distributions of the first three sampled positions agree (a
// chi-square test of homogeneity per position and case; tokens seen fewer than 5 times in both
// runs pooled). Each of the 24 tests has a false-alarm rate of 1e-4 (critical value from the
// Wilson-Hilferty approximation), so the whole check fails by chance with probability < 0.3%.
TEST_F(SpeculativeServing, TemperatureOneDistributionMatchesNonSpeculativeSampling) {
  auto plain = make_pipeline({});
  auto spec = speculating();
  constexpr int kSeeds = 150;
  const auto a = first_token_counts(*plain, golden_, 1, kSeeds, 3, nullptr);
  const auto b = first_token_counts(*spec, golden_, 1000001, kSeeds, 3, nullptr);
  std::map<size_t, std::map<int32_t, std::pair<int, int>>> cells;  // (position, case) -> token -> counts
  for (const auto& [key, n] : a) cells[key.first][key.second].first += n;
  for (const auto& [key, n] : b) cells[key.first][key.second].second += n;
  int tests = 0;
  for (const auto& [where, tokens] : cells) {
    std::vector<std::pair<double, double>> table;
    std::pair<double, double> pooled{0, 0};
    for (const auto& [token, n] : tokens) {
      if (n.first + n.second < 10) {
        pooled.first += n.first;
        pooled.second += n.second;
      } else {
        table.push_back({static_cast<double>(n.first), static_cast<double>(n.second)});
      }
    }
    if (pooled.first + pooled.second > 0) table.push_back(pooled);
    if (table.size() < 2) continue;
    double chi2 = 0.0;
    for (const auto& [x, y] : table) {
      const double expected = (x + y) / 2.0;  // both runs have kSeeds draws
      chi2 += (x - expected) * (x - expected) / expected + (y - expected) * (y - expected) / expected;
    }
    const double k = static_cast<double>(table.size() - 1);
    const double z = 3.719;  // one-sided normal quantile of 1e-4
    const double critical = k * std::pow(1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k)), 3.0);
    EXPECT_LT(chi2, critical) << "position/case " << where << " with " << table.size() << " cells";
    ++tests;
  }
  EXPECT_GT(tests, 0);
  EXPECT_GT(spec->service().stats().verify_passes, 0);
}

TEST_F(SpeculativeServing, BadSettingsAreRefusedWithTheFlagNamed) {
  auto refused = [&](EngineSettings settings, const std::string& flag) {
    try {
      speculating("qwen3-moe-tiny", settings);
      ADD_FAILURE() << "accepted settings with a bad " << flag;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  };
  EngineSettings s = speculative_settings();
  s.speculative_algorithm = "EAGLE9";
  refused(s, "--speculative-algorithm");
  s = speculative_settings();
  s.speculative_num_draft_tokens = 1;
  refused(s, "--speculative-num-draft-tokens");
  s = speculative_settings();
  s.speculative_num_steps = 0;
  refused(s, "--speculative-num-steps");
  s = speculative_settings();
  s.speculative_eagle_topk = 0;
  refused(s, "--speculative-eagle-topk");
  s = speculative_settings();
  s.max_tree_experts = 3;  // below top_k = 4
  refused(s, "--max-tree-experts");
  s = HarnessOptions{}.settings;
  s.max_tree_experts = 8;  // without speculation
  refused(s, "--max-tree-experts");
}

}  // namespace
}  // namespace moe::testing
