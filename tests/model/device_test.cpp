// Choosing the device: the names parse (or the error lists them), Model::load is the CPU model
// only, and --device cuda never falls back to the CPU silently.
#include <gtest/gtest.h>

#include "common/error.h"
#include "worker/load_model_on_device.h"

namespace moe {
namespace {

const std::string kModelDir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny";

TEST(DeviceTest, ParsesCpuAndCuda) {
  EXPECT_EQ(parse_device("cpu"), Device::Cpu);
  EXPECT_EQ(parse_device("cuda"), Device::Cuda);
  std::string message;
  try {
    parse_device("gpu");
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "unknown device 'gpu'; choose one of: cpu, cuda");
}

TEST(DeviceTest, ModelLoadBuildsOnlyTheCpuModel) {
  ModelOptions options;
  options.device = Device::Cuda;
  EXPECT_THROW(Model::load(kModelDir, options), Error);
  EXPECT_EQ(load_model_on_device(kModelDir, {})->config().architecture, "Qwen3MoeForCausalLM");
}

// A build without the CUDA backend, or a machine without a GPU, refuses with a message that names
// CUDA; where both exist, the model loads.
TEST(DeviceTest, CudaLoadsOrFailsNamingCuda) {
  ModelOptions options;
  options.device = Device::Cuda;
  try {
    EXPECT_EQ(load_model_on_device(kModelDir, options)->config().architecture, "Qwen3MoeForCausalLM");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe
