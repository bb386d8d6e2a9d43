// The placement ModelOptions ask for, shared by the CPU and CUDA models: the uniform split over
// ep_size, a placement file (whose device count must match ep_size unless ep_size is 1), and the
// placement's own errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "model/model.h"

namespace moe {
namespace {

ModelConfig config_of(int num_experts) {
  ModelConfig config;
  config.num_experts = num_experts;
  return config;
}

TEST(ExpertPlacementFor, UniformSplitOverEpSize) {
  ModelOptions options;
  EXPECT_EQ(expert_placement_for(config_of(8), options).device_expert_mapping,
            (std::vector<std::vector<int32_t>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  options.ep_size = 4;
  EXPECT_EQ(expert_placement_for(config_of(8), options).device_expert_mapping,
            (std::vector<std::vector<int32_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  options.ep_size = 3;
  EXPECT_THROW(expert_placement_for(config_of(8), options), Error);
}

TEST(ExpertPlacementFor, FileMustMatchEpSizeUnlessItIsOne) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("moe_placement_for_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << "[[3, 0], [1, 2]]";
  ModelOptions options;
  options.expert_placement_file = path.string();
  EXPECT_EQ(expert_placement_for(config_of(4), options).device_expert_mapping,
            (std::vector<std::vector<int32_t>>{{3, 0}, {1, 2}}));
  options.ep_size = 2;
  EXPECT_EQ(expert_placement_for(config_of(4), options).ep_size(), 2);
  options.ep_size = 4;
  try {
    expert_placement_for(config_of(4), options);
    ADD_FAILURE() << "a placement over 2 devices was accepted with ep_size 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("places experts on 2 devices but --ep-size is 4"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace moe
