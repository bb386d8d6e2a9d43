// Expert placements: the uniform split, seeded permutations, and every way a placement file can be wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "moe/expert_placement.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

// Every expert exactly once, the same count on every device.
void expect_partition(const ExpertPlacement& placement, int num_experts, int ep_size) {
  ASSERT_EQ(placement.num_experts, num_experts);
  ASSERT_EQ(placement.ep_size(), ep_size);
  std::vector<int32_t> all;
  for (const auto& device : placement.device_expert_mapping) {
    EXPECT_EQ(device.size(), static_cast<size_t>(num_experts / ep_size));
    all.insert(all.end(), device.begin(), device.end());
  }
  std::sort(all.begin(), all.end());
  for (int e = 0; e < num_experts; ++e) EXPECT_EQ(all[e], e);
}

TEST(ExpertPlacement, UniformSplitsInOrder) {
  const ExpertPlacement placement = ExpertPlacement::uniform(8, 4);
  EXPECT_EQ(placement.device_expert_mapping,
            (std::vector<std::vector<int32_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_THROW(ExpertPlacement::uniform(6, 4), Error);
  EXPECT_THROW(ExpertPlacement::uniform(8, 0), Error);
}

TEST(ExpertPlacement, RandomIsASeededPermutation) {
  for (int ep : {1, 2, 4, 8}) expect_partition(ExpertPlacement::random(64, ep, 3), 64, ep);
  EXPECT_EQ(ExpertPlacement::random(64, 4, 3).device_expert_mapping,
            ExpertPlacement::random(64, 4, 3).device_expert_mapping);
  EXPECT_NE(ExpertPlacement::random(64, 4, 3).device_expert_mapping,
            ExpertPlacement::random(64, 4, 4).device_expert_mapping);
  EXPECT_NE(ExpertPlacement::random(64, 4, 3).device_expert_mapping,
            ExpertPlacement::uniform(64, 4).device_expert_mapping);
  EXPECT_THROW(ExpertPlacement::random(10, 4, 1), Error);
}

TEST(ExpertPlacement, OwnersNameTheDeviceOfEveryExpert) {
  EXPECT_EQ(ExpertPlacement::uniform(6, 3).expert_owners(), (std::vector<int32_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(ExpertPlacement::uniform(4, 1).expert_owners(), (std::vector<int32_t>{0, 0, 0, 0}));
  const ExpertPlacement placement = ExpertPlacement::random(64, 4, 9);
  const std::vector<int32_t> owner = placement.expert_owners();
  ASSERT_EQ(owner.size(), 64u);
  for (int d = 0; d < 4; ++d)
    for (int32_t global : placement.device_expert_mapping[d]) EXPECT_EQ(owner[global], d) << "expert " << global;
}

// Writes placement files into a fresh temporary folder, removed afterwards.
class PlacementFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moe_placement_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& contents) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << contents;
    return path.string();
  }

  // from_file must fail with a message naming the file and containing `problem`.
  void expect_error(const std::string& name, const std::string& contents, int num_experts,
                    const std::string& problem) {
    const std::string path = write(name, contents);
    try {
      ExpertPlacement::from_file(path, num_experts);
      ADD_FAILURE() << name << ": expected a moe::Error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(path), std::string::npos) << message;
      EXPECT_NE(message.find(problem), std::string::npos) << message;
    }
  }

  fs::path dir_;
};

TEST_F(PlacementFileTest, ReadsAValidPermutation) {
  const ExpertPlacement placement = ExpertPlacement::from_file(write("ok.json", "[[3, 0], [1, 2]]"), 4);
  EXPECT_EQ(placement.num_experts, 4);
  EXPECT_EQ(placement.device_expert_mapping, (std::vector<std::vector<int32_t>>{{3, 0}, {1, 2}}));
}

TEST_F(PlacementFileTest, NamesTheFileAndTheProblem) {
  expect_error("not_json.json", "[[0, 1], [2, 3", 4, "not valid JSON");
  expect_error("not_array.json", "{\"devices\": 2}", 4, "expected a non-empty JSON array");
  expect_error("flat.json", "[0, 1, 2, 3]", 4, "device 0 is not an array");
  expect_error("too_few.json", "[[0], [1]]", 4, "wrong count");
  expect_error("missing.json", "[[0, 1], [3, 4]]", 5, "expert 2 is missing");
  expect_error("duplicate.json", "[[0, 1], [1, 2]]", 4, "duplicate expert 1");
  expect_error("out_of_range.json", "[[0, 1], [2, 9]]", 4, "expert 9");
  expect_error("uneven.json", "[[0, 1, 2], [3]]", 4, "uneven split");
  expect_error("not_int.json", "[[0, 1], [2, \"x\"]]", 4, "not an expert id");
}

}  // namespace
}  // namespace moe
