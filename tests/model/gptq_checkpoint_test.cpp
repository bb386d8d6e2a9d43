// GPTQ checkpoints, tensor by tensor: a hand-packed module reads back as the values docs/quantization.md
// says it holds, and every malformed one (wrong shape or dtype, a missing tensor, an asymmetric
// zero point, act-order g_idx, a group size the kernels cannot take) is refused naming the tensor;
// unsupported quantization_config variants are refused naming the field; a whole checkpoint with a
// tensor missing is refused when the model loads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "model/model.h"
#include "model/random_checkpoint.h"
#include "model/safetensors.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

TensorToWrite words(std::string name, std::vector<int64_t> shape, const std::vector<uint32_t>& values) {
  TensorToWrite t{std::move(name), DType::I32, std::move(shape), {}};
  t.bytes.resize(values.size() * 4);
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

// Module "m" of a [rows = 8, cols = 64] int4 Linear in groups of `group` columns: qweight [8, 8],
// qzeros [groups, 1], scales [groups, 8], g_idx [64].
struct Module {
  int64_t groups;
  std::vector<uint32_t> qweight = std::vector<uint32_t>(64), qzeros;
  std::vector<float> scales;
  std::vector<uint32_t> g_idx = std::vector<uint32_t>(64);
  std::vector<int64_t> qweight_shape{8, 8};
  bool with_scales = true;

  explicit Module(int group = 32) : groups(64 / group), qzeros(static_cast<size_t>(groups), 0x77777777u) {
    for (int i = 0; i < 64; ++i) {
      // Row r's word of input block i: fields k = 0..7 hold (r + i + k) % 16.
      const int r = i % 8, block = i / 8;
      uint32_t word = 0;
      for (int k = 0; k < 8; ++k) word |= static_cast<uint32_t>((r + block + k) % 16) << (4 * k);
      qweight[block * 8 + r] = word;
      g_idx[i] = static_cast<uint32_t>(i / group);
    }
    for (int i = 0; i < groups * 8; ++i) scales.push_back(0.25f * static_cast<float>(i + 1));  // [group][row]
  }
  std::vector<TensorToWrite> tensors() const {
    std::vector<TensorToWrite> out{words("m.qweight", qweight_shape, qweight), words("m.qzeros", {groups, 1}, qzeros),
                                   words("m.g_idx", {64}, g_idx)};
    if (with_scales) out.push_back(make_tensor("m.scales", DType::BF16, {groups, 8}, scales));
    return out;
  }
};

class GptqCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moe_gptq_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  WeightView load(const Module& module, GptqConfig config = {4, 32, true}) {
    write_safetensors((dir_ / "model.safetensors").string(), module.tensors());
    checkpoint_ = Checkpoint::open(dir_.string(), {Quantization::None, 128, config});
    return checkpoint_.projection("m.weight", 8, 64);
  }

  // The error loading `module`, which must name `tensor`.
  void expect_error_naming(const Module& module, const std::string& tensor, GptqConfig config = {4, 32, true}) {
    try {
      load(module, config);
      ADD_FAILURE() << "loaded without error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(tensor), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
  Checkpoint checkpoint_ = Checkpoint();
};

TEST_F(GptqCheckpoint, HandPackedModuleReadsAsScaleTimesValueMinusZero) {
  const Module module;
  const WeightView w = load(module);
  EXPECT_EQ(w.dtype, DType::Q4);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 64; ++c) {
      const int stored = (r + c / 8 + c % 8) % 16;
      const float scale = 0.25f * static_cast<float>((c / 32) * 8 + r + 1);
      ASSERT_EQ(w.at(r, c), scale * static_cast<float>(stored - 8)) << r << ", " << c;
    }
}

TEST_F(GptqCheckpoint, Int8ModulesAndGptqV2Zeros) {
  Module module;  // int8 packs 4 fields a word: [16, 8] qweight for 64 columns
  module.qweight.assign(128, 0x80FF0001u);
  module.qzeros = std::vector<uint32_t>(4, 0x80808080u);  // v2: the zero itself, 128
  module.scales = std::vector<float>(16, 0.5f);
  write_safetensors((dir_ / "model.safetensors").string(),
                    {words("m.qweight", {16, 8}, module.qweight), words("m.qzeros", {2, 2}, module.qzeros),
                     make_tensor("m.scales", DType::F32, {2, 8}, module.scales), words("m.g_idx", {64}, module.g_idx)});
  checkpoint_ = Checkpoint::open(dir_.string(), {Quantization::None, 128, GptqConfig{8, 32, false}});
  const WeightView w = checkpoint_.projection("m.weight", 8, 64);
  EXPECT_EQ(w.dtype, DType::Q8);
  const int fields[4] = {0x01, 0x00, 0xFF, 0x80};  // little end first
  for (int c = 0; c < 64; ++c) ASSERT_EQ(w.at(3, c), 0.5f * static_cast<float>(fields[c % 4] - 128)) << c;
}

TEST_F(GptqCheckpoint, WrongQweightShapeNamesIt) {
  Module module;
  module.qweight_shape = {4, 16};
  expect_error_naming(module, "m.qweight");
}

TEST_F(GptqCheckpoint, MissingScalesNamesThem) {
  Module module;
  module.with_scales = false;
  expect_error_naming(module, "m.scales");
}

TEST_F(GptqCheckpoint, AsymmetricZeroPointNamesQzeros) {
  Module module;
  module.qzeros[1] = 0x77777776u;
  expect_error_naming(module, "m.qzeros");
}

TEST_F(GptqCheckpoint, ActOrderGroupIndexNamesIt) {
  Module module;
  std::swap(module.g_idx[0], module.g_idx[40]);
  expect_error_naming(module, "m.g_idx");
}

TEST_F(GptqCheckpoint, GroupSizeTheKernelsCannotTakeNamesTheModule) {
  // 16 columns a group: the kernels step 32 columns at a time.
  expect_error_naming(Module(16), "m.scales", GptqConfig{4, 16, true});
}

TEST_F(GptqCheckpoint, BitsNotInTheConfigsLayoutNameTheTensor) {
  expect_error_naming(Module(), "m.qweight", GptqConfig{8, 32, true});  // int8 packs 4 a word: [16, 8]
}

std::string config_error(const nlohmann::json& quantization_config) {
  try {
    read_gptq_config({{"quantization_config", quantization_config}}, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(GptqConfigTest, UnsupportedVariantsAreNamed) {
  const nlohmann::json good = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"sym", true}, {"desc_act", false}};
  const auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json q = good;
    q[key] = std::move(value);
    return q;
  };
  EXPECT_NE(config_error(with("bits", 3)).find("bits 3 is not supported"), std::string::npos);
  EXPECT_NE(config_error(with("quant_method", "awq")).find("quant_method 'awq'"), std::string::npos);
  EXPECT_NE(config_error(with("sym", false)).find("sym false"), std::string::npos);
  EXPECT_NE(config_error(with("desc_act", true)).find("desc_act true"), std::string::npos);
  EXPECT_NE(config_error(with("checkpoint_format", "marlin")).find("checkpoint_format 'marlin'"), std::string::npos);
  EXPECT_NE(config_error(with("group_size", 0)).find("group_size 0"), std::string::npos);
  const auto config = read_gptq_config({{"quantization_config", good}}, "config.json");
  ASSERT_TRUE(config.has_value());
  EXPECT_EQ(config->bits, 4);
  EXPECT_EQ(config->group_size, 128);
  EXPECT_TRUE(config->zeros_stored_minus_one);
  EXPECT_FALSE(read_gptq_config(nlohmann::json::object(), "config.json").has_value());
}

TEST(GptqConfigTest, QuantizingAGptqCheckpointAtLoadIsRefused) {
  EXPECT_THROW(projection_format(GptqConfig{}, Quantization::Int8, 128), Error);
  EXPECT_NO_THROW(projection_format(GptqConfig{}, Quantization::None, 128));
  EXPECT_THROW(parse_quantization("int2"), Error);
}

// A random GPTQ checkpoint of the tiny Qwen3-MoE config loads and runs; the same checkpoint with one
// expert's scales left out is refused at start naming them.
TEST_F(GptqCheckpoint, ModelStartRefusesACheckpointWithoutAnExpertsScales) {
  const nlohmann::json config = read_json_file(std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny/config.json");
  const fs::path whole = dir_ / "whole", broken = dir_ / "broken";
  RandomCheckpointOptions options;
  options.gptq_bits = 4;
  options.gptq_group_size = 32;
  write_random_checkpoint(config, whole.string(), options);
  EXPECT_EQ(Model::load(whole.string())->config().gptq->bits, 4);

  const std::string dropped = "model.layers.2.mlp.experts.5.down_proj.scales";
  const Checkpoint source = Checkpoint::open(whole.string());
  std::vector<TensorToWrite> kept;
  const nlohmann::json index = read_json_file((whole / "model.safetensors.index.json").string());
  for (const auto& [name, shard] : index["weight_map"].items()) {
    if (name == dropped) continue;
    const TensorInfo& t = source.tensor(name);
    int64_t count = 1;
    for (int64_t d : t.shape) count *= d;
    const auto* bytes = static_cast<const uint8_t*>(t.data);
    kept.push_back({name, t.dtype, t.shape, {bytes, bytes + count * static_cast<int64_t>(dtype_size(t.dtype))}});
  }
  fs::create_directories(broken);
  fs::copy_file(whole / "config.json", broken / "config.json");
  write_safetensors((broken / "model.safetensors").string(), kept);
  try {
    Model::load(broken.string());
    ADD_FAILURE() << "loaded without error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dropped), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe
