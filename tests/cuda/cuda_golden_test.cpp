// The CUDA model reproduces transformers on every golden case of every fixture, through the engine
// step as a server runs it (EngineCore, capture on: the rows come out of the CUDA copy engine's
// device buffers and copy stream): each case alone, all in one batch, and with the prompts fed in
// chunks (so prefill chunks and decode tokens share steps); and over 2 and 4 expert-parallel shards
// on the GPU, placed uniformly, at random and strided, from placement files. Skipped where no GPU
// is visible.
#include "common/error.h"
#include "cuda/device.h"
#include "moe/expert_placement.h"
#include "support/golden_support.h"
#include "support/placement_file.h"
#include "worker/load_model_on_device.h"

namespace moe::testing {
namespace {

class CudaGoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    golden_ = load_golden(GetParam());
  }

  std::unique_ptr<Model> load(ModelOptions options = {}) {
    options.device = Device::Cuda;
    return load_model_on_device(golden_.model_dir, options);
  }

  Golden golden_;
};

// One test per fixture: every way the engine cuts the work, each check labelled with its run.
TEST_P(CudaGoldenTest, AloneBatchedAndInChunks) {
  expect_each_case_alone_matches_golden(golden_, [&] { return load(); });
  expect_batch_matches_golden(golden_, load(), "cuda batch+last", 0, true);
  for (int chunk = 1; chunk <= 9; ++chunk)
    expect_batch_matches_golden(golden_, load(), "cuda chunk " + std::to_string(chunk), chunk);
}

// Expert d of shard j is j + d·D: every shard holds experts from all over the id range.
ExpertPlacement strided(int num_experts, int ep_size) {
  ExpertPlacement placement;
  placement.num_experts = num_experts;
  placement.device_expert_mapping.resize(static_cast<size_t>(ep_size));
  for (int e = 0; e < num_experts; ++e) placement.device_expert_mapping[e % ep_size].push_back(e);
  return placement;
}

// The shards' partial sums change only the float32 rounding: ids and routing rows stay the goldens'.
// Batched (decode steps replay CUDA graphs of the sharded step) and in chunks of 3.
TEST_P(CudaGoldenTest, ExpertParallelShardsUniformRandomAndStrided) {
  const int num_experts = load_model_config(golden_.model_dir).num_experts;
  for (int ep : {2, 4}) {
    ASSERT_EQ(num_experts % ep, 0);
    const std::string label = "cuda ep " + std::to_string(ep);
    ModelOptions uniform;
    uniform.ep_size = ep;
    expect_batch_matches_golden(golden_, load(uniform), label + " uniform", 0, true);
    expect_batch_matches_golden(golden_, load(uniform), label + " uniform chunk 3", 3);
    for (const auto& [name, placement] : {std::pair{"random", ExpertPlacement::random(num_experts, ep, 99 + ep)},
                                          std::pair{"strided", strided(num_experts, ep)}}) {
      const PlacementFile file(placement, std::string("cuda_") + name);
      ModelOptions placed;
      placed.ep_size = ep;
      placed.expert_placement_file = file.path();
      expect_batch_matches_golden(golden_, load(placed), label + " " + name, 0, true);
    }
  }
}

// The CPU's placement errors, from the same code: an uneven split, a file for another shard count.
TEST_P(CudaGoldenTest, ExpertParallelOptionsAreCheckedAsOnTheCpu) {
  const int num_experts = load_model_config(golden_.model_dir).num_experts;
  ModelOptions uneven;
  uneven.ep_size = 5;
  EXPECT_THROW(load(uneven), Error);
  const PlacementFile four(ExpertPlacement::uniform(num_experts, 4), "cuda_four");
  ModelOptions mismatched;
  mismatched.ep_size = 2;
  mismatched.expert_placement_file = four.path();
  try {
    load(mismatched);
    ADD_FAILURE() << "a placement over 4 shards was accepted with ep_size 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("places experts on 4 devices but --ep-size is 2"), std::string::npos)
        << e.what();
  }
}

// The GPU runs its own expert kernels: the CPU's runners are refused by name, `cuda` and `auto` load.
TEST_P(CudaGoldenTest, OnlyTheCudaRunnerBackendLoads) {
  for (const MoeBackend cpu_only : {MoeBackend::Reference, MoeBackend::Grouped}) {
    ModelOptions options;
    options.moe_backend = cpu_only;
    try {
      load(options);
      ADD_FAILURE() << "a CPU runner backend was accepted with --device cuda";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("runs on the CPU only"), std::string::npos) << e.what();
    }
  }
  ModelOptions cuda;
  cuda.moe_backend = MoeBackend::Cuda;
  EXPECT_NE(load(cuda), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaGoldenTest, ::testing::ValuesIn(kAllGoldenFixtures), fixture_test_name);

}  // namespace
}  // namespace moe::testing
