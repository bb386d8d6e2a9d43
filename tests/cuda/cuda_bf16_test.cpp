// --device cuda --kernel-dtype bf16 on every fixture: the GEMMs of steps above Blas::kSmallRows
// tokens (every prefill of these batches, and decode steps of more than 16 sequences) in bf16
// products on tensor cores (cuBLAS's bf16 GEMM, the grouped expert MLP's wmma kernels), against the
// float32 goldens of transformers with the CPU's bf16 rules (support/golden_support.h): greedy ids
// equal up to a first difference only where the golden's margin is below kBf16LogitAllowance,
// routing equal up to there except at near-ties within kBf16RouterAllowance; the agreement and the
// drift from the GPU's float32 mode are printed. Skipped where no GPU is visible.
#include <iostream>

#include "cuda/device.h"
#include "support/golden_support.h"
#include "worker/load_model_on_device.h"

namespace moe::testing {
namespace {

class CudaBf16Test : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    golden_ = load_golden(GetParam());
  }

  std::unique_ptr<Model> load(KernelDType products) const {
    ModelOptions options;
    options.device = Device::Cuda;
    options.kernel_dtype = products;
    return load_model_on_device(golden_.model_dir, options);
  }

  Golden golden_;
};

// The prompts in one forward (a step of every prompt's tokens): bf16 products move the logits, but
// no greedy margin by as much as the allowance.
TEST_P(CudaBf16Test, LogitDriftIsRealAndBelowTheAllowance) {
  const auto f32 = load(KernelDType::F32), bf16 = load(KernelDType::BF16);
  const LogitDrift drift = measure_logit_drift(*f32, *bf16, golden_);
  std::cout << GetParam() << ": on the GPU, bf16 products move prompt logits by at most " << drift.logits
            << ", the greedy margin by at most " << drift.margin << "\n";
  EXPECT_GT(drift.logits, 0.0) << "the bf16 model computed exactly what the float32 one did";
  EXPECT_LT(drift.margin, kBf16LogitAllowance);
}

TEST_P(CudaBf16Test, GreedyIdsAndRoutingAgreeWithGoldensBeyondTheBf16Error) {
  const Bf16Agreement agreement = expect_bf16_agreement_with_golden(golden_, load(KernelDType::BF16));
  std::cout << GetParam() << ": on the GPU, bf16 greedy ids agree with the goldens on " << agreement.agreeing
            << " of " << agreement.total << " outputs (up to each case's first difference)\n";
  RecordProperty("greedy_ids_agreeing", static_cast<int>(agreement.agreeing));
  RecordProperty("greedy_ids_total", static_cast<int>(agreement.total));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaBf16Test, ::testing::ValuesIn(kGoldenFixtures), fixture_test_name);

}  // namespace
}  // namespace moe::testing
