// A truncated checkpoint (moe-make-checkpoint --truncate-from) holds exactly the first layers'
// tensors, byte for byte, and as a model routes the prompt exactly as the full model's first layers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/json_file.h"
#include "model/model_config.h"
#include "model/random_checkpoint.h"
#include "model/safetensors.h"
#include "model/truncated_checkpoint.h"
#include "support/golden_support.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

class TruncatedCheckpointTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string source() const { return std::string(MOE_TEST_DATA_DIR) + "/" + GetParam(); }
  std::string out() const {
    return (fs::temp_directory_path() / ("moe_truncated_" + std::to_string(::getpid()) + "_" + GetParam())).string();
  }
  void TearDown() override { fs::remove_all(out()); }
};

TEST_P(TruncatedCheckpointTest, HoldsTheFirstLayersByteForByte) {
  write_truncated_checkpoint(source(), out(), 2, 64 * 1024);
  const ModelConfig config = load_model_config(out());
  EXPECT_EQ(config.num_hidden_layers, 2);
  const auto specs = checkpoint_manifest(config);
  const auto index = read_json_file(out() + "/model.safetensors.index.json");
  EXPECT_EQ(specs.size(), index["weight_map"].size());
  const Checkpoint full = Checkpoint::open(source());
  const Checkpoint cut = Checkpoint::open(out());
  for (const TensorSpec& spec : specs) {
    ASSERT_TRUE(cut.has(spec.name)) << spec.name;
    const TensorInfo& a = full.tensor(spec.name);
    const TensorInfo& b = cut.tensor(spec.name);
    ASSERT_EQ(a.shape, b.shape) << spec.name;
    ASSERT_EQ(a.dtype, b.dtype) << spec.name;
    size_t bytes = dtype_size(a.dtype);
    for (int64_t d : a.shape) bytes *= static_cast<size_t>(d);
    EXPECT_EQ(std::memcmp(a.data, b.data, bytes), 0) << spec.name;
  }
  EXPECT_FALSE(cut.has("model.layers.2.input_layernorm.weight"));
}

TEST_P(TruncatedCheckpointTest, RoutesThePromptAsTheFullModelsFirstLayers) {
  write_truncated_checkpoint(source(), out(), 2);
  const std::vector<int32_t> prompt = {11, 22, 33, 44, 55, 66};
  const msg::GenerateRequest request = testing::greedy_request("r", prompt, 1);
  const auto full = testing::run_engine(Model::load(source()), {request})[0];
  const auto cut = testing::run_engine(Model::load(out()), {request})[0];
  const ModelConfig config = load_model_config(source());
  const auto full_layers = static_cast<size_t>(config.num_moe_layers());
  const auto cut_layers = static_cast<size_t>(load_model_config(out()).num_moe_layers());
  const auto k = static_cast<size_t>(config.num_experts_per_tok);
  ASSERT_EQ(full.num_rows, static_cast<int64_t>(prompt.size()));
  ASSERT_EQ(cut.num_rows, full.num_rows);
  ASSERT_EQ(cut_layers, 2u);
  for (size_t row = 0; row < prompt.size(); ++row)
    for (size_t l = 0; l < cut_layers; ++l)
      for (size_t j = 0; j < k; ++j)
        EXPECT_EQ(cut.rows[(row * cut_layers + l) * k + j], full.rows[(row * full_layers + l) * k + j])
            << "row " << row << " layer " << l;
}

TEST_P(TruncatedCheckpointTest, RefusesALayerCountOutsideTheModelNamingTheFlag) {
  for (int keep : {0, 5}) {
    try {
      write_truncated_checkpoint(source(), out(), keep);
      FAIL() << "keep " << keep << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--keep-layers"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(out()));
}

TEST_P(TruncatedCheckpointTest, RefusesToOverwriteItsSource) {
  EXPECT_THROW(write_truncated_checkpoint(source(), source(), 1), Error);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TruncatedCheckpointTest, ::testing::ValuesIn(testing::kGoldenFixtures),
                         testing::fixture_test_name);

}  // namespace
}  // namespace moe
