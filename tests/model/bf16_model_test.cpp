// --kernel-dtype bf16 on every fixture: the model whose GEMMs round their activations to bf16
// against the float32 goldens of transformers. Rounding an activation to bf16 moves it by up to
// 2^-9 of itself, so logits and router logits move far more than float32's 1e-5 and near-ties that
// float32 keeps can flip. Measured on these fixtures (day 5, 22:15): prompt logits move by up to
// 0.18 over the whole vocabulary, each prompt's greedy margin (top logit less the second) by up to
// 0.066; greedy tokens flipped where the golden's margin was at most 0.0175; routing stopped
// differing from the golden once router gaps and weight gaps under 0.02 were excused. The
// allowances are at least twice those:
//  - greedy ids equal the golden's up to the first decision whose greedy_margin is below
//    kBf16LogitAllowance (every fixture's agreement is printed), and the prompts' margin drift,
//    measured each run, is nonzero and below it;
//  - routing rows equal the golden's on every position up to that decision (later positions follow
//    other tokens), except at a k-th/(k+1)-th boundary with router_min_gap below
//    kBf16RouterAllowance or a top-k order whose adjacent weights are within it.
// The default mode's goldens are golden_test.cpp's, untouched. Refusals are checked here too:
// bf16 products with --quantization, a GPTQ checkpoint or a float32 checkpoint. (The GPU's bf16
// products are checked against the goldens the same way in tests/cuda/cuda_bf16_test.cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/error.h"
#include "model/random_checkpoint.h"
#include "model/safetensors.h"
#include "support/golden_support.h"

namespace moe::testing {
namespace {

ModelOptions bf16_products() {
  ModelOptions options;
  options.kernel_dtype = KernelDType::BF16;
  return options;
}

// The error message of `load`, empty when it loads.
std::string load_error(const std::function<void()>& load) {
  try {
    load();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class Bf16ModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { golden_ = load_golden(GetParam()); }
  Golden golden_;
};

// bf16 products change the logits, and the margin that decides each prompt's greedy token (the
// float32 run's top logit less its second) by less than kBf16LogitAllowance, so a margin that wide
// cannot flip.
TEST_P(Bf16ModelTest, LogitDriftIsRealAndBelowTheAllowance) {
  const auto f32 = Model::load(golden_.model_dir), bf16 = Model::load(golden_.model_dir, bf16_products());
  const LogitDrift drift = measure_logit_drift(*f32, *bf16, golden_);
  std::cout << GetParam() << ": bf16 products move prompt logits by at most " << drift.logits
            << ", the greedy margin by at most " << drift.margin << "\n";
  EXPECT_GT(drift.logits, 0.0) << "the bf16 model computed exactly what the float32 one did";
  EXPECT_LT(drift.margin, kBf16LogitAllowance);
}

TEST_P(Bf16ModelTest, GreedyIdsAndRoutingAgreeWithGoldensBeyondTheBf16Error) {
  const Bf16Agreement agreement =
      expect_bf16_agreement_with_golden(golden_, Model::load(golden_.model_dir, bf16_products()));
  std::cout << GetParam() << ": bf16 greedy ids agree with the goldens on " << agreement.agreeing << " of "
            << agreement.total << " outputs (up to each case's first difference)\n";
  RecordProperty("greedy_ids_agreeing", static_cast<int>(agreement.agreeing));
  RecordProperty("greedy_ids_total", static_cast<int>(agreement.total));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Bf16ModelTest, ::testing::ValuesIn(kGoldenFixtures), fixture_test_name);

const std::string kModelDir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny";

TEST(Bf16Refusals, WithQuantizationAtLoad) {
  for (const Quantization q : {Quantization::Int8, Quantization::Int4}) {
    ModelOptions options = bf16_products();
    options.quantization = q;
    const std::string error = load_error([&] { Model::load(kModelDir, options); });
    EXPECT_NE(error.find("--kernel-dtype bf16"), std::string::npos) << error;
    EXPECT_NE(error.find(quantization_name(q)), std::string::npos) << error;
  }
}

TEST(Bf16Refusals, WithAGptqCheckpoint) {
  const std::string error =
      load_error([] { projection_format(GptqConfig{}, Quantization::None, 128, KernelDType::BF16); });
  EXPECT_NE(error.find("GPTQ"), std::string::npos) << error;
  EXPECT_NO_THROW(projection_format(GptqConfig{}, Quantization::None, 128, KernelDType::F32));
}

// A float32 matrix cannot be multiplied in bf16 products: the load names the tensor.
TEST(Bf16Refusals, WithAFloat32Checkpoint) {
  const auto dir = std::filesystem::temp_directory_path() / ("moe_bf16_f32_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  write_safetensors((dir / "model.safetensors").string(), {make_tensor("w", DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  ProjectionFormat format;
  format.kernel_dtype = KernelDType::BF16;
  const Checkpoint checkpoint = Checkpoint::open(dir.string(), format);
  const std::string error = load_error([&] { checkpoint.matrix("w", 2, 3); });
  std::filesystem::remove_all(dir);
  EXPECT_NE(error.find("'w' is F32"), std::string::npos) << error;
}

// The matrices of a bf16 load carry the mode to linear(); the default load's do not.
TEST(Bf16Refusals, OnlyTheBf16LoadMarksItsMatrices) {
  ProjectionFormat format;
  format.kernel_dtype = KernelDType::BF16;
  const std::string name = "model.layers.0.self_attn.q_proj.weight";
  const Checkpoint plain = Checkpoint::open(kModelDir), bf16 = Checkpoint::open(kModelDir, format);
  const TensorInfo& t = plain.tensor(name);
  EXPECT_EQ(plain.matrix(name, t.shape[0], t.shape[1]).kernel_dtype, KernelDType::F32);
  EXPECT_EQ(bf16.matrix(name, t.shape[0], t.shape[1]).kernel_dtype, KernelDType::BF16);
}

}  // namespace
}  // namespace moe::testing
