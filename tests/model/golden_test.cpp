// The engine reproduces transformers on every golden case of every fixture, however the work is cut:
// alone, in one batch, in prefill chunks, over expert-parallel shards, with either MoE runner.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/golden_support.h"
#include "moe/expert_placement.h"

namespace moe::testing {
namespace {

class GoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { golden_ = load_golden(GetParam()); }

  std::unique_ptr<Model> load(const ModelOptions& options = {}) { return Model::load(golden_.model_dir, options); }

  // Runs every case in one batch and checks each against its golden.
  void run_batch_and_check(Model& model, const GeneratorOptions& options, const std::string& label) {
    const auto results = generate(model, greedy_requests(golden_), options);
    for (size_t i = 0; i < golden_.cases.size(); ++i) {
      const auto& c = golden_.cases[i];
      const int64_t rows = static_cast<int64_t>(c.prompt_ids.size()) + golden_.max_new_tokens -
                           (options.include_last ? 0 : 1);
      expect_matches_golden(golden_, c, results[i], rows, label + " case " + std::to_string(i));
    }
  }

  Golden golden_;
};

TEST_P(GoldenTest, EachCaseAlone) {
  auto model = load();
  const auto requests = greedy_requests(golden_);
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto result = generate(*model, {requests[i]});
    const auto& c = golden_.cases[i];
    expect_matches_golden(golden_, c, result[0], static_cast<int64_t>(c.prompt_ids.size()) + golden_.max_new_tokens - 1,
                          "alone case " + std::to_string(i));
  }
}

TEST_P(GoldenTest, AllCasesInOneBatchIncludingLastRow) {
  auto model = load();
  GeneratorOptions options;
  options.include_last = true;
  run_batch_and_check(*model, options, "batch+last");
}

TEST_P(GoldenTest, PromptFedInChunksOf1To9) {
  auto model = load();
  for (int chunk = 1; chunk <= 9; ++chunk) {
    GeneratorOptions options;
    options.prefill_chunk_size = chunk;
    run_batch_and_check(*model, options, "chunk " + std::to_string(chunk));
  }
}

TEST_P(GoldenTest, ReferenceRunnerBackend) {
  ModelOptions mo;
  mo.moe_backend = MoeBackend::Reference;
  auto model = load(mo);
  run_batch_and_check(*model, {}, "reference backend");
}

TEST_P(GoldenTest, ExpertParallelShardsUniformAndRandomPlacement) {
  const int num_experts = load_model_config(golden_.model_dir).num_experts;
  for (int ep : {2, 4, 8}) {
    if (num_experts % ep != 0) continue;
    ModelOptions uniform;
    uniform.ep_size = ep;
    auto model = load(uniform);
    run_batch_and_check(*model, {}, "ep " + std::to_string(ep) + " uniform");

    const auto placement = ExpertPlacement::random(num_experts, ep, 1234 + ep);
    const auto path = std::filesystem::temp_directory_path() / ("moe_placement_" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << nlohmann::json(placement.device_expert_mapping).dump();
    ModelOptions random;
    random.ep_size = ep;
    random.expert_placement_file = path.string();
    auto shuffled = load(random);
    run_batch_and_check(*shuffled, {}, "ep " + std::to_string(ep) + " random");
    std::filesystem::remove(path);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest, ::testing::Values("qwen3-moe-tiny", "mixtral-tiny", "qwen2-moe-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) if (ch == '-') ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace moe::testing
