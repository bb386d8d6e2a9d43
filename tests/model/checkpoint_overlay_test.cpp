// A checkpoint overlay (what a weight group's Receive loads): checkpoint A with checkpoint B's
// tensors laid over it in two halves (an overlay of an overlay, the first removed before the load)
// holds B's bytes, and the engine's ids and routing rows on it equal those on B itself. A name or
// shape the model does not have is refused, naming the tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "model/checkpoint_overlay.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "support/golden_support.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

class CheckpointOverlayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = read_json_file(std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny/config.json");
    config_["vocab_size"] = 512;
    root_ = fs::temp_directory_path() / ("moe_overlay_" + std::to_string(::getpid()));
    RandomCheckpointOptions options;
    options.shard_bytes = 256 * 1024;
    options.seed = 1;
    write_random_checkpoint(config_, (root_ / "a").string(), options);
    options.seed = 2;
    write_random_checkpoint(config_, (root_ / "b").string(), options);
    b_tensors_ = random_tensors(load_model_config((root_ / "b").string()), options);
  }
  void TearDown() override { fs::remove_all(root_); }

  nlohmann::json config_;
  fs::path root_;
  std::vector<TensorToWrite> b_tensors_;
};

TEST_F(CheckpointOverlayTest, BsTensorsOverAServeAsBDoes) {
  const size_t half = b_tensors_.size() / 2;
  const std::vector<TensorToWrite> first(b_tensors_.begin(), b_tensors_.begin() + static_cast<long>(half));
  const std::vector<TensorToWrite> second(b_tensors_.begin() + static_cast<long>(half), b_tensors_.end());
  write_checkpoint_overlay((root_ / "a").string(), first, (root_ / "o1").string());
  write_checkpoint_overlay((root_ / "o1").string(), second, (root_ / "o2").string());
  fs::remove_all(root_ / "o1");

  const Checkpoint overlay = Checkpoint::open((root_ / "o2").string());
  ASSERT_EQ(overlay.tensors().size(), b_tensors_.size());
  for (const TensorToWrite& tensor : b_tensors_) {
    const TensorInfo& info = overlay.tensor(tensor.name);
    ASSERT_EQ(info.shape, tensor.shape) << tensor.name;
    ASSERT_EQ(std::memcmp(info.data, tensor.bytes.data(), tensor.bytes.size()), 0) << tensor.name;
  }
  const msg::GenerateRequest req = testing::greedy_request("r", {1, 2, 3, 4, 5}, 6);
  const auto on_overlay = testing::run_engine(Model::load((root_ / "o2").string()), {req})[0];
  const auto on_b = testing::run_engine(Model::load((root_ / "b").string()), {req})[0];
  const auto on_a = testing::run_engine(Model::load((root_ / "a").string()), {req})[0];
  EXPECT_EQ(on_overlay.ids, on_b.ids);
  EXPECT_EQ(on_overlay.rows, on_b.rows);
  EXPECT_NE(on_a.rows, on_b.rows);  // the two checkpoints route differently: the comparison can fail
}

TEST_F(CheckpointOverlayTest, ANameOrShapeTheModelLacksIsRefusedNamingIt) {
  const auto refusal = [&](TensorToWrite tensor) {
    try {
      write_checkpoint_overlay((root_ / "a").string(), {tensor}, (root_ / "bad").string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  TensorToWrite unknown = b_tensors_.front();
  unknown.name = "model.layers.0.mlp.experts.99.up_proj.weight";
  EXPECT_NE(refusal(unknown).find("no tensor named \"model.layers.0.mlp.experts.99.up_proj.weight\""),
            std::string::npos);
  TensorToWrite reshaped = b_tensors_.front();
  reshaped.shape = {reshaped.shape.front() * 2};
  EXPECT_NE(refusal(reshaped).find("\"" + reshaped.name + "\" has shape"), std::string::npos);
  EXPECT_FALSE(fs::exists(root_ / "bad"));  // nothing written
}

}  // namespace
}  // namespace moe
