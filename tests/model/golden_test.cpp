// The engine reproduces transformers on every golden case of every fixture, however the work is cut:
// alone, in one batch, in prefill chunks, over expert-parallel shards, with either MoE runner. Every
// run goes through the engine step (EngineCore), as a server's requests do.
#include "moe/expert_placement.h"
#include "support/golden_support.h"
#include "support/placement_file.h"

namespace moe::testing {
namespace {

class GoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { golden_ = load_golden(GetParam()); }

  std::unique_ptr<Model> load(const ModelOptions& options = {}) { return Model::load(golden_.model_dir, options); }

  Golden golden_;
};

TEST_P(GoldenTest, EachCaseAlone) {
  expect_each_case_alone_matches_golden(golden_, [&] { return load(); });
}

TEST_P(GoldenTest, AllCasesInOneBatchIncludingLastRow) {
  expect_batch_matches_golden(golden_, load(), "batch+last", 0, true);
}

TEST_P(GoldenTest, PromptFedInChunksOf1To9) {
  for (int chunk = 1; chunk <= 9; ++chunk)
    expect_batch_matches_golden(golden_, load(), "chunk " + std::to_string(chunk), chunk);
}

TEST_P(GoldenTest, ReferenceRunnerBackend) {
  ModelOptions mo;
  mo.moe_backend = MoeBackend::Reference;
  expect_batch_matches_golden(golden_, load(mo), "reference backend");
}

TEST_P(GoldenTest, ExpertParallelShardsUniformAndRandomPlacement) {
  const int num_experts = load_model_config(golden_.model_dir).num_experts;
  for (int ep : {2, 4, 8}) {
    if (num_experts % ep != 0) continue;
    ModelOptions uniform;
    uniform.ep_size = ep;
    expect_batch_matches_golden(golden_, load(uniform), "ep " + std::to_string(ep) + " uniform");

    const PlacementFile placement(ExpertPlacement::random(num_experts, ep, 1234 + ep), "golden");
    ModelOptions random;
    random.ep_size = ep;
    random.expert_placement_file = placement.path();
    expect_batch_matches_golden(golden_, load(random), "ep " + std::to_string(ep) + " random");
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest, ::testing::ValuesIn(kAllGoldenFixtures), fixture_test_name);

}  // namespace
}  // namespace moe::testing
