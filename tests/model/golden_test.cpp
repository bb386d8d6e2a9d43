// The engine reproduces transformers on every golden case of every fixture, however the work is cut:
// alone, in one batch, in prefill chunks, over expert-parallel shards, with either MoE runner. Every
// run goes through the engine step (EngineCore), as a server's requests do.
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

  // Runs every case in one batch (steps of at most `chunk` tokens, 0 = no limit) and checks each
  // against its golden.
  void run_batch_and_check(std::unique_ptr<Model> model, const std::string& label, int64_t chunk = 0,
                           bool include_last = false) {
    const auto results = run_engine(std::move(model), greedy_requests(golden_, include_last), chunk);
    for (size_t i = 0; i < golden_.cases.size(); ++i) {
      const auto& c = golden_.cases[i];
      const int64_t rows = static_cast<int64_t>(c.prompt_ids.size()) + golden_.max_new_tokens -
                           (include_last ? 0 : 1);
      expect_matches_golden(golden_, c, results[i], rows, label + " case " + std::to_string(i));
    }
  }

  Golden golden_;
};

TEST_P(GoldenTest, EachCaseAlone) {
  const auto requests = greedy_requests(golden_);
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto result = run_engine(load(), {requests[i]});
    const auto& c = golden_.cases[i];
    expect_matches_golden(golden_, c, result[0], static_cast<int64_t>(c.prompt_ids.size()) + golden_.max_new_tokens - 1,
                          "alone case " + std::to_string(i));
  }
}

TEST_P(GoldenTest, AllCasesInOneBatchIncludingLastRow) {
  run_batch_and_check(load(), "batch+last", 0, true);
}

TEST_P(GoldenTest, PromptFedInChunksOf1To9) {
  for (int chunk = 1; chunk <= 9; ++chunk) run_batch_and_check(load(), "chunk " + std::to_string(chunk), chunk);
}

TEST_P(GoldenTest, ReferenceRunnerBackend) {
  ModelOptions mo;
  mo.moe_backend = MoeBackend::Reference;
  run_batch_and_check(load(mo), "reference backend");
}

TEST_P(GoldenTest, ExpertParallelShardsUniformAndRandomPlacement) {
  const int num_experts = load_model_config(golden_.model_dir).num_experts;
  for (int ep : {2, 4, 8}) {
    if (num_experts % ep != 0) continue;
    ModelOptions uniform;
    uniform.ep_size = ep;
    run_batch_and_check(load(uniform), "ep " + std::to_string(ep) + " uniform");

    const auto placement = ExpertPlacement::random(num_experts, ep, 1234 + ep);
    const auto path = std::filesystem::temp_directory_path() / ("moe_placement_" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << nlohmann::json(placement.device_expert_mapping).dump();
    ModelOptions random;
    random.ep_size = ep;
    random.expert_placement_file = path.string();
    run_batch_and_check(load(random), "ep " + std::to_string(ep) + " random");
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
