// --max-tree-experts through the engine step: the rows a reply returns for the tokens of one
// verify pass use at most that many experts per MoE layer (the routing actually used), and a limit
// of every expert serves exactly what no limit serves.
#include <gtest/gtest.h>

#include "speculative_checks.h"

namespace moe::testing {
namespace {

std::unique_ptr<EngineCore> engine_with(const EngineSettings& settings) {
  HarnessOptions options;
  options.settings = settings;
  return make_pipeline(options);
}

using ExpertLimitServing = SpeculativeServingTest;

// Each request runs alone and streamed, so every chunk after the prompt's is one step's rows: one
// plain decode's, or the kept tokens of one verify pass.
TEST_F(ExpertLimitServing, RowsOfEachVerifyPassUseAtMostTheLimitPerLayer) {
  const int L = golden_.num_moe_layers, K = golden_.top_k;
  int64_t verify_chunks = 0, verify_passes = 0;
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    auto engine = engine_with(ngram_settings(4));
    msg::GenerateRequest request = all_cases("x")[i];
    request.stream = true;
    const std::vector<msg::TextOutput> chunks = engine->run({request});
    ASSERT_FALSE(chunks.empty());
    verify_chunks += expect_chunks_within_expert_limit(chunks, L, K, 4, "case " + std::to_string(i));
    const SchedulerStats stats = engine->service().stats();
    verify_passes += stats.verify_passes;
    EXPECT_LE(stats.verify_distinct_experts, 4 * stats.verify_layer_passes);  // what the worker counted
  }
  EXPECT_GT(verify_passes, 0);
  EXPECT_GT(verify_chunks, 0);  // some verify passes kept several tokens
}

TEST_F(ExpertLimitServing, ALimitOfEveryExpertServesWhatNoLimitServes) {
  expect_limit_of_every_expert_serves_what_no_limit_serves(engine_with);
}

}  // namespace
}  // namespace moe::testing
