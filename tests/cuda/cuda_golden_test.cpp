// The CUDA model reproduces transformers on every golden case of every fixture, through the engine
// step as a server runs it (EngineCore, capture on: the rows come out of the CUDA copy engine's
// device buffers and copy stream): each case alone, all in one batch, and with the prompts fed in
// chunks (so prefill chunks and decode tokens share steps). Skipped where no GPU is visible.
#include "cuda/device.h"
#include "support/golden_support.h"
#include "worker/load_model.h"

namespace moe::testing {
namespace {

class CudaGoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    golden_ = load_golden(GetParam());
  }

  std::unique_ptr<Model> load() {
    ModelOptions options;
    options.device = Device::Cuda;
    return load_model(golden_.model_dir, options);
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

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaGoldenTest, ::testing::ValuesIn(kGoldenFixtures), fixture_test_name);

}  // namespace
}  // namespace moe::testing
