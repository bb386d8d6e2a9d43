// --load-format dummy: a model made from config.json alone (Model::load with dummy_weights_seed, no
// weight file in its directory) computes exactly what the model loaded from moe-make-checkpoint's
// checkpoint of that config and seed computes (the same bytes, made in memory); another seed gives other
// weights; the fingerprint names config and seed without reading weight files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "model/model.h"
#include "model/model_fingerprint.h"
#include "model/random_checkpoint.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

class DummyWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("moe_dummy_" + std::to_string(::getpid()));
    config_only_ = root_ / "config-only";
    fs::create_directories(config_only_);
    fs::copy_file(fs::path(MOE_TEST_DATA_DIR) / "qwen3-moe-tiny" / "config.json", config_only_ / "config.json");
    RandomCheckpointOptions options;
    options.seed = 7;
    write_random_checkpoint(read_json_file((config_only_ / "config.json").string()), (root_ / "written").string(),
                            options);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Logits of one prompt of 5 tokens.
  static std::vector<float> logits_of(Model& model) {
    ForwardBatch batch;
    batch.add_sequence({11, 420, 7, 3000, 5}, {0, 1, 2, 3, 4}, true);
    KvCache kv = model.make_kv_cache(8);
    std::vector<float> logits;
    model.forward(batch, kv, logits);
    return logits;
  }

  fs::path root_, config_only_;
};

TEST_F(DummyWeights, EqualTheWrittenRandomCheckpointOfTheSameSeed) {
  ModelOptions dummy;
  dummy.dummy_weights_seed = 7;
  const std::unique_ptr<Model> made = Model::load(config_only_.string(), dummy);
  const std::unique_ptr<Model> read = Model::load((root_ / "written").string());
  const std::vector<float> logits = logits_of(*made);
  EXPECT_EQ(logits, logits_of(*read));
  dummy.dummy_weights_seed = 8;
  EXPECT_NE(logits_of(*Model::load(config_only_.string(), dummy)), logits);
}

TEST_F(DummyWeights, TheFingerprintNamesConfigAndSeed) {
  const uint64_t seven = dummy_weights_fingerprint(config_only_.string(), 7);
  EXPECT_EQ(seven, dummy_weights_fingerprint(config_only_.string(), 7));
  EXPECT_NE(seven, dummy_weights_fingerprint(config_only_.string(), 8));
  EXPECT_NE(seven, model_fingerprint(config_only_.string()));
}

}  // namespace
}  // namespace moe
