// Speculative decoding with --device cuda through the engine step (tests/serving's harness and
// checks, the model worker running the CUDA model): NGRAM drafts keep every fixture's golden ids and
// routing rows alone and batched, and beside requests that do not speculate; the target as its own
// STANDALONE draft (the draft on the GPU too) keeps them and returns the golden rows as the draft's
// routing; --max-tree-experts 4 serves exactly what the CPU model serves with it (ids and rows), each
// verify pass's rows within 4 experts per layer, counted by the worker from the GPU's rows; a limit
// of every expert serves what no limit serves. Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include "cuda/device.h"
#include "serving/speculative_checks.h"

namespace moe::testing {
namespace {

std::string fixture_dir(const std::string& fixture) { return std::string(MOE_TEST_DATA_DIR) + "/" + fixture; }

EngineSettings self_drafting(const std::string& fixture) {
  EngineSettings s = ngram_settings();
  s.speculative_algorithm = "STANDALONE";
  s.speculative_draft_model_path = fixture_dir(fixture);
  return s;
}

std::unique_ptr<EngineCore> engine_on(Device device, const EngineSettings& settings,
                                      const std::string& fixture = "qwen3-moe-tiny") {
  HarnessOptions options;
  options.fixture = fixture;
  options.settings = settings;
  options.device = device;
  return make_pipeline(options);
}

class CudaSpeculativeGolden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaSpeculativeGolden, NgramEveryCaseAloneAndAllBatched) {
  expect_drafts_accepted(*expect_every_case_golden_alone_and_batched(
      GetParam(), [&] { return engine_on(Device::Cuda, ngram_settings(), GetParam()); }));
}

TEST_P(CudaSpeculativeGolden, StandaloneTargetAsItsOwnDraftEveryCaseAloneAndAllBatched) {
  expect_drafts_accepted(*expect_every_case_golden_alone_and_batched(
      GetParam(), [&] { return engine_on(Device::Cuda, self_drafting(GetParam()), GetParam()); }));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaSpeculativeGolden, ::testing::ValuesIn(kGoldenFixtures), fixture_test_name);

class CudaSpeculativeServing : public SpeculativeServingTest {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    SpeculativeServingTest::SetUp();
  }
};

TEST_F(CudaSpeculativeServing, SpeculatingAndNonSpeculatingRequestsShareBatches) {
  auto engine = engine_on(Device::Cuda, ngram_settings());
  expect_mixed_with_plain_golden(*engine);
  expect_drafts_accepted(*engine);
}

// The draft model's shadow forwards on the GPU hand their rows to the host: the target as its own
// draft routes every position as the target does.
TEST_F(CudaSpeculativeServing, TheTargetAsItsOwnDraftReturnsTheGoldenRowsAsTheDraftsRouting) {
  auto engine = engine_on(Device::Cuda, self_drafting("qwen3-moe-tiny"));
  std::vector<msg::GenerateRequest> requests = all_cases("d");
  for (msg::GenerateRequest& r : requests) r.routing.return_draft_routed_experts = true;
  const auto joined = join_outputs(engine->run(requests));
  expect_all_golden(joined, "d");
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    const JoinedOutput& out = joined.at({"d" + std::to_string(i), 0});
    EXPECT_EQ(out.draft_num_rows, out.num_rows) << "case " << i;
    EXPECT_EQ(out.draft_rows, out.rows) << "case " << i;
  }
  expect_drafts_accepted(*engine);
}

// Each request alone and streamed, so every chunk after the prompt's is one step's rows: a plain
// decode's, or the kept tokens of one verify pass.
TEST_F(CudaSpeculativeServing, ExpertLimitServesWhatTheCpuModelServesWithinTheLimit) {
  const int L = golden_.num_moe_layers, K = golden_.top_k;
  int64_t verify_chunks = 0, verify_passes = 0, distinct_experts = 0;
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    msg::GenerateRequest request = all_cases("x")[i];
    request.stream = true;
    auto cpu = engine_on(Device::Cpu, ngram_settings(4));
    auto gpu = engine_on(Device::Cuda, ngram_settings(4));
    const std::vector<msg::TextOutput> cpu_chunks = cpu->run({request});
    const std::vector<msg::TextOutput> chunks = gpu->run({request});
    const JoinedOutput want = join_outputs(cpu_chunks).at({request.rid, 0});
    const JoinedOutput got = join_outputs(chunks).at({request.rid, 0});
    EXPECT_EQ(got.ids, want.ids) << "case " << i;
    EXPECT_EQ(got.rows, want.rows) << "case " << i;
    verify_chunks += expect_chunks_within_expert_limit(chunks, L, K, 4, "case " + std::to_string(i));
    const SchedulerStats stats = gpu->service().stats();
    verify_passes += stats.verify_passes;
    distinct_experts += stats.verify_distinct_experts;
    EXPECT_LE(stats.verify_distinct_experts, 4 * stats.verify_layer_passes);
    EXPECT_EQ(stats.verify_distinct_experts, cpu->service().stats().verify_distinct_experts) << "case " << i;
  }
  EXPECT_GT(verify_passes, 0);
  EXPECT_GT(distinct_experts, 0);  // the worker counted the experts in the GPU's rows
  EXPECT_GT(verify_chunks, 0);     // some verify passes kept several tokens
}

TEST_F(CudaSpeculativeServing, ALimitOfEveryExpertServesWhatNoLimitServes) {
  expect_limit_of_every_expert_serves_what_no_limit_serves(
      [](const EngineSettings& settings) { return engine_on(Device::Cuda, settings); });
}

}  // namespace
}  // namespace moe::testing
