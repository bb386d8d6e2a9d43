// The CUDA model refuses at load what its kernels do not run yet (GLM-4.5's sigmoid grouped routing,
// ungated shared experts and partial rotary, DeepSeek-V3's multi-head latent attention) rather than
// compute wrong rows. The refusal comes before
// any device is looked for, so this runs with or without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "worker/load_model_on_device.h"

namespace moe {
namespace {

TEST(CudaUnsupportedModel, Glm4MoeIsRefusedAtLoadNamingWhatItNeeds) {
  ModelOptions options;
  options.device = Device::Cuda;
  try {
    load_model_on_device(std::string(MOE_TEST_DATA_DIR) + "/glm4-moe-tiny", options);
    FAIL() << "the CUDA model loaded GLM-4.5";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const char* part : {"sigmoid grouped routing", "partial rotary", "ungated shared experts",
                             "runs on --device cpu only for now"})
      EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(CudaUnsupportedModel, DeepseekV3IsRefusedAtLoadNamingItsLatentAttention) {
  ModelOptions options;
  options.device = Device::Cuda;
  try {
    load_model_on_device(std::string(MOE_TEST_DATA_DIR) + "/deepseek-v3-tiny", options);
    FAIL() << "the CUDA model loaded DeepSeek-V3";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const char* part : {"multi-head latent attention", "sigmoid grouped routing", "runs on --device cpu only for now"})
      EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace moe
