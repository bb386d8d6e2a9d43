// The manifest names exactly the tensors transformers saved for each fixture, with their shapes, and
// a random checkpoint written from it loads and runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "model/model_config.h"
#include "model/random_checkpoint.h"
#include "model/safetensors.h"
#include "support/golden_support.h"

namespace moe {
namespace {

class ManifestTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ManifestTest, MatchesTheFixtureCheckpointExactly) {
  const std::string dir = std::string(MOE_TEST_DATA_DIR) + "/" + GetParam();
  const ModelConfig config = load_model_config(dir);
  // transformers saves no next-token-prediction module (DeepSeek-V3's and GLM-4.5's configs name
  // one): those tensors, named after the last decoder layer, are left out of the comparison.
  const std::string nextn_prefix = "model.layers." + std::to_string(config.num_hidden_layers) + ".";
  std::vector<TensorSpec> specs;
  for (const TensorSpec& spec : checkpoint_manifest(config))
    if (spec.name.rfind(nextn_prefix, 0) != 0) specs.push_back(spec);
  const Checkpoint ckpt = Checkpoint::open(dir);
  EXPECT_EQ(specs.size(), ckpt.tensors().size());
  for (const auto& spec : specs) {
    ASSERT_TRUE(ckpt.has(spec.name)) << spec.name;
    EXPECT_EQ(ckpt.tensor(spec.name).shape, spec.shape) << spec.name;
  }
}

TEST_P(ManifestTest, RandomCheckpointLoadsIsDeterministicAndRuns) {
  namespace fs = std::filesystem;
  const std::string fixture = std::string(MOE_TEST_DATA_DIR) + "/" + GetParam();
  nlohmann::json config = read_json_file(fixture + "/config.json");
  config["vocab_size"] = 512;
  const fs::path base = fs::temp_directory_path() / ("moe_random_" + std::to_string(::getpid()));
  RandomCheckpointOptions options;
  options.seed = 7;
  options.shard_bytes = 64 * 1024;  // forces several shards
  write_random_checkpoint(config, (base / "a").string(), options);
  write_random_checkpoint(config, (base / "b").string(), options);
  const auto index = read_json_file((base / "a" / "model.safetensors.index.json").string());
  std::set<std::string> shards;
  for (const auto& [name, shard] : index["weight_map"].items()) shards.insert(shard.get<std::string>());
  EXPECT_GT(shards.size(), 1u);
  const msg::GenerateRequest req = testing::greedy_request("r", {1, 2, 3, 4, 5}, 6);
  const auto ra = testing::run_engine(Model::load((base / "a").string()), {req})[0];
  const auto rb = testing::run_engine(Model::load((base / "b").string()), {req})[0];
  EXPECT_EQ(ra.ids, rb.ids);
  EXPECT_EQ(ra.rows, rb.rows);
  // Routing is spread: the first layer uses more than top_k distinct experts over 10 positions.
  std::set<int32_t> used(ra.rows.begin(), ra.rows.end());
  EXPECT_GT(static_cast<int>(used.size()), load_model_config((base / "a").string()).num_experts_per_tok);
  fs::remove_all(base);
}

// DeepSeek-V3 with a plain q_proj (q_lora_rank null) and YaRN rotary: the manifest writes q_proj instead
// of the q LoRA, and the model loads and generates the same tokens twice.
TEST(DeepseekV3Random, WithoutQLoraAndWithYarnLoadsAndRuns) {
  namespace fs = std::filesystem;
  nlohmann::json config = read_json_file(std::string(MOE_TEST_DATA_DIR) + "/deepseek-v3-tiny/config.json");
  config["vocab_size"] = 512;
  config["q_lora_rank"] = nullptr;
  config["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 10000.0}, {"factor", 40.0}, {"mscale", 1.0},
                               {"mscale_all_dim", 1.0}, {"original_max_position_embeddings", 64}};
  const fs::path dir = fs::temp_directory_path() / ("moe_random_mla_" + std::to_string(::getpid()));
  RandomCheckpointOptions options;
  options.seed = 3;
  write_random_checkpoint(config, dir.string(), options);
  const Checkpoint ckpt = Checkpoint::open(dir.string());
  EXPECT_TRUE(ckpt.has("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_FALSE(ckpt.has("model.layers.0.self_attn.q_a_proj.weight"));
  const msg::GenerateRequest req = testing::greedy_request("r", {1, 2, 3, 4, 5}, 6);
  const auto a = testing::run_engine(Model::load(dir.string()), {req})[0];
  const auto b = testing::run_engine(Model::load(dir.string()), {req})[0];
  EXPECT_EQ(a.ids.size(), 6u);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.rows, b.rows);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ManifestTest, ::testing::ValuesIn(testing::kAllGoldenFixtures),
                         testing::fixture_test_name);

}  // namespace
}  // namespace moe
