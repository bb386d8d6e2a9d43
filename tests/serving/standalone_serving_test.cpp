// STANDALONE speculative decoding (a draft model in the worker, its trees verified by the target)
// through the engine step: greedy replies keep exactly the golden ids and routing rows with the
// target itself as draft and with a smaller random draft checkpoint of the same vocabulary — alone,
// batched with requests that do not speculate, from the prefix cache and after preemption, and with
// either draft quantized to int4 (--speculative-draft-model-quantization) — the draft
// that is the target has nearly every draft accepted, temperature 1 draws what plain decoding draws,
// and bad draft settings stop the engine's start naming the flag.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "common/error.h"
#include "common/json_file.h"
#include "speculative_checks.h"
#include "model/random_checkpoint.h"

namespace moe::testing {
namespace {

std::string fixture_dir(const std::string& fixture) { return std::string(MOE_TEST_DATA_DIR) + "/" + fixture; }

// A random checkpoint of qwen3-moe-tiny's architecture, written once per test process: 2 layers of
// 8 experts (top-2) instead of 4 of 16, with `vocab_size` tokens.
std::string random_draft(int64_t vocab_size) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("moe_draft_" + std::to_string(::getpid()) + "_" + std::to_string(vocab_size));
  if (!std::filesystem::exists(dir / "config.json")) {
    nlohmann::json config = read_json_file(fixture_dir("qwen3-moe-tiny") + "/config.json");
    config["num_hidden_layers"] = 2;
    config["max_window_layers"] = 2;
    config["num_experts"] = 8;
    config["num_experts_per_tok"] = 2;
    config["vocab_size"] = vocab_size;
    RandomCheckpointOptions options;
    options.seed = 11;
    write_random_checkpoint(config, dir.string(), options);
  }
  return dir.string();
}

std::string small_draft() { return random_draft(151936); }

EngineSettings standalone_settings(const std::string& draft_dir) {
  return with_standalone_draft(HarnessOptions{}.settings, draft_dir, 2, 8);
}

std::unique_ptr<EngineCore> drafting(const EngineSettings& settings, const std::string& fixture = "qwen3-moe-tiny") {
  HarnessOptions options;
  options.fixture = fixture;
  options.settings = settings;
  return make_pipeline(options);
}

// The draft of each golden case: the target itself, or the small random checkpoint, quantized as
// --speculative-draft-model-quantization says ("": as the float target).
struct DraftCase {
  std::string fixture;
  bool target_as_draft;
  std::string draft_quantization;
};

class StandaloneGolden : public ::testing::TestWithParam<DraftCase> {};

// A draft's precision may change what it proposes, never what is kept: the target decides.
TEST_P(StandaloneGolden, EveryCaseAloneAndAllBatchedGiveGoldenIdsAndRows) {
  const DraftCase& param = GetParam();
  EngineSettings settings = standalone_settings(param.target_as_draft ? fixture_dir(param.fixture) : small_draft());
  settings.speculative_draft_model_quantization = param.draft_quantization;
  const auto engine =
      expect_every_case_golden_alone_and_batched(param.fixture, [&] { return drafting(settings, param.fixture); });
  if (param.target_as_draft) expect_drafts_accepted(*engine);
  EXPECT_GT(engine->service().stats().verify_passes, 0);
}

std::vector<DraftCase> draft_cases() {
  std::vector<DraftCase> cases;
  for (const std::string& fixture : kGoldenFixtures) cases.push_back({fixture, true, ""});
  cases.push_back({"qwen3-moe-tiny", false, ""});
  cases.push_back({"qwen3-moe-tiny", true, "int4"});
  cases.push_back({"qwen3-moe-tiny", false, "int4"});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Drafts, StandaloneGolden, ::testing::ValuesIn(draft_cases()),
                         [](const ::testing::TestParamInfo<DraftCase>& info) {
                           std::string name = info.param.fixture + (info.param.target_as_draft ? "_self" : "_small") +
                                              (info.param.draft_quantization.empty() ? "" : "_" + info.param.draft_quantization);
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

using StandaloneServing = SpeculativeServingTest;

// A draft identical to the target proposes the target's own greedy chain: with one child per node
// every draft but those a stop or the token limit cuts is accepted.
TEST_F(StandaloneServing, TheTargetAsItsOwnDraftHasNearlyEveryDraftAccepted) {
  EngineSettings settings = standalone_settings(fixture_dir("qwen3-moe-tiny"));
  settings.speculative_eagle_topk = 1;
  settings.speculative_num_draft_tokens = 5;
  auto engine = drafting(settings);
  expect_all_golden(join_outputs(engine->run(all_cases("self"))), "self");
  const SchedulerStats stats = engine->service().stats();
  EXPECT_GT(stats.verify_passes, 0);
  EXPECT_GE(static_cast<double>(stats.accepted_drafts), 0.9 * static_cast<double>(stats.draft_tokens))
      << stats.accepted_drafts << " of " << stats.draft_tokens << " drafts accepted";
  std::cout << "target as draft: " << stats.verify_passes << " verifies, " << stats.accepted_drafts << " of "
            << stats.draft_tokens << " drafts accepted\n";
}

TEST_F(StandaloneServing, DraftingAndNonSpeculatingRequestsShareBatches) {
  for (const std::string& draft : {fixture_dir("qwen3-moe-tiny"), small_draft()}) {
    auto engine = drafting(standalone_settings(draft));
    expect_mixed_with_plain_golden(*engine);
    EXPECT_GT(engine->service().stats().verify_passes, 0);
  }
}

TEST_F(StandaloneServing, RejectedDraftSlotsGoBackToThePool) {
  EngineSettings settings = standalone_settings(small_draft());
  settings.disable_radix_cache = true;
  auto engine = drafting(settings);
  expect_all_golden(join_outputs(engine->run(all_cases("k"))), "k");
  EXPECT_EQ(engine->service().stats().kv_slots_used, 0);
}

// The draft's KV lives in the same slots as the target's: prefix-cache hits reuse both.
TEST_F(StandaloneServing, PrefixCacheHitsReturnGoldenRowsAndKeepTheDraftsRight) {
  EngineSettings settings = standalone_settings(fixture_dir("qwen3-moe-tiny"));
  settings.speculative_eagle_topk = 1;
  settings.speculative_num_draft_tokens = 5;
  auto engine = drafting(settings);
  expect_prefix_hits_golden(*engine);
  const SchedulerStats stats = engine->service().stats();
  EXPECT_GT(stats.cache_hit_tokens, 0);
  EXPECT_GE(static_cast<double>(stats.accepted_drafts), 0.9 * static_cast<double>(stats.draft_tokens));
}

TEST_F(StandaloneServing, PreemptionKeepsOutputsAndRowsExact) {
  for (const std::string& draft : {fixture_dir("qwen3-moe-tiny"), small_draft()}) {
    EngineSettings settings = standalone_settings(draft);
    settings.max_total_tokens = 200;  // far less than 8 prompts + 24 tokens each
    auto engine = drafting(settings);
    const auto joined = join_outputs(engine->run(all_cases("p")));
    EXPECT_TRUE(engine->errors().empty());
    EXPECT_GT(engine->service().stats().num_preemptions, 0);
    expect_all_golden(joined, "p");
    EXPECT_GT(engine->service().stats().verify_passes, 0);
  }
}

// The drafts are a deterministic function of the context, so the tree acceptance's rejection
// sampling (each token drawn from the target with the request's own draw) applies unchanged: the
// same seeds give the same tokens as plain decoding.
TEST_F(StandaloneServing, TemperatureOneWithTheSameSeedsDrawsTheSameTokens) {
  auto sampled = [&](EngineCore& engine) {
    std::vector<msg::GenerateRequest> requests = all_cases("t");
    for (size_t i = 0; i < requests.size(); ++i) {
      requests[i].sampling.temperature = 1.0f;
      requests[i].sampling.top_k = 4;
      requests[i].sampling.seed = 100 + i;
    }
    std::vector<std::vector<int32_t>> ids;
    const auto joined = join_outputs(engine.run(requests));
    for (const msg::GenerateRequest& r : requests) ids.push_back(joined.at({r.rid, 0}).ids);
    return ids;
  };
  auto plain = make_pipeline({});
  auto spec = drafting(standalone_settings(fixture_dir("qwen3-moe-tiny")));
  EXPECT_EQ(sampled(*plain), sampled(*spec));
  EXPECT_GT(spec->service().stats().accepted_drafts, 0);
}

TEST_F(StandaloneServing, BadDraftSettingsAreRefusedWithTheFlagNamed) {
  auto refused = [&](const EngineSettings& settings, const std::string& flag, const std::string& why) {
    try {
      drafting(settings);
      ADD_FAILURE() << "accepted " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << why << ": " << e.what();
    }
  };
  refused(standalone_settings(""), "--speculative-draft-model-path", "STANDALONE without a draft");
  refused(standalone_settings("/nonexistent/draft"), "--speculative-draft-model-path", "a draft that does not exist");
  refused(standalone_settings(random_draft(512)), "--speculative-draft-model-path", "a draft of another vocabulary");
  EngineSettings s = standalone_settings(small_draft());
  s.speculative_algorithm = "NGRAM";
  refused(s, "--speculative-draft-model-path", "a draft without STANDALONE");
  s = standalone_settings(small_draft());
  s.speculative_eagle_topk = 21;
  refused(s, "--speculative-eagle-topk", "more children per node than the sampler ranks");
  s = standalone_settings(small_draft());
  s.speculative_draft_model_quantization = "int2";
  refused(s, "--speculative-draft-model-quantization", "a draft quantization that does not exist");
  s.speculative_algorithm = "NGRAM";
  s.speculative_draft_model_path.clear();
  s.speculative_draft_model_quantization = "int4";
  refused(s, "--speculative-draft-model-quantization", "a draft quantization without STANDALONE");
}

}  // namespace
}  // namespace moe::testing
