// config.json parsing: both spellings seen in the wild, dense-layer selection, clear refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "model/architecture.h"
#include "model/model_config.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(MOE_TEST_DATA_DIR) + "/" + name; }

// Loads a variant of a fixture's config.json with `edit` applied.
ModelConfig load_edited(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json config = read_json_file(fixture(name) + "/config.json");
  edit(config);
  const fs::path dir = fs::temp_directory_path() / ("moe_cfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump();
  struct Cleanup {
    fs::path dir;
    ~Cleanup() { fs::remove_all(dir); }
  } cleanup{dir};
  return load_model_config(dir.string());
}

std::string error_of(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  try {
    load_edited(name, edit);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ModelConfig, Qwen3HubSpelling) {
  const ModelConfig c = load_model_config(fixture("qwen3-moe-tiny"));
  EXPECT_EQ(c.architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(c.num_experts, 16);
  EXPECT_EQ(c.num_experts_per_tok, 4);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.moe_layer_ids, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(c.head_dim, 16);
}

TEST(ModelConfig, MixtralTransformers5Spelling) {
  const ModelConfig c = load_model_config(fixture("mixtral-tiny"));
  EXPECT_EQ(c.num_experts, 8);  // num_local_experts
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);  // rope_parameters.rope_theta
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.num_moe_layers(), 3);
}

TEST(ModelConfig, Qwen2MoeSharedExpertAndBias) {
  const ModelConfig c = load_model_config(fixture("qwen2-moe-tiny"));
  EXPECT_EQ(c.shared_expert_intermediate_size, 48);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.norm_topk_prob);
  EXPECT_EQ(c.head_dim, 8);  // hidden / heads when head_dim is absent
}

TEST(ModelConfig, Glm4MoeRoutingSharedExpertsDenseLayersAndPartialRotary) {
  const ModelConfig c = load_model_config(fixture("glm4-moe-tiny"));
  EXPECT_EQ(c.num_experts, 16);  // n_routed_experts
  EXPECT_EQ(c.routing, RoutingKind::SigmoidGrouped);
  EXPECT_EQ(c.n_group, 1);
  EXPECT_EQ(c.topk_group, 1);
  EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 2.5);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.shared_expert_intermediate_size, 32);  // moe_intermediate_size · n_shared_experts
  EXPECT_EQ(c.moe_layer_ids, (std::vector<int>{1, 2, 3}));  // first_k_dense_replace 1
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.qk_norm);  // use_qk_norm
  EXPECT_EQ(c.rotary_dim, 8);  // head_dim 16 · partial_rotary_factor 0.5
  EXPECT_EQ(load_model_config(fixture("qwen3-moe-tiny")).rotary_dim, 16);
}

TEST(ModelConfig, Glm4MoeRefusesOtherScoringAndMissingDenseLayerCount) {
  EXPECT_NE(error_of("glm4-moe-tiny", [](auto& j) { j["scoring_func"] = "softmax"; }).find("scoring_func"),
            std::string::npos);
  EXPECT_NE(error_of("glm4-moe-tiny", [](auto& j) { j.erase("first_k_dense_replace"); }).find("first_k_dense_replace"),
            std::string::npos);
  EXPECT_NE(error_of("glm4-moe-tiny", [](auto& j) { j["rope_parameters"]["partial_rotary_factor"] = 0.0; })
                .find("rotary dims"),
            std::string::npos);
}

TEST(ModelConfig, DenseLayersFromMlpOnlyLayersAndSparseStep) {
  auto c = load_edited("qwen3-moe-tiny", [](auto& j) { j["mlp_only_layers"] = {1}; });
  EXPECT_EQ(c.moe_layer_ids, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(c.moe_index(2), 1);
  EXPECT_EQ(c.moe_index(1), -1);
  c = load_edited("qwen3-moe-tiny", [](auto& j) { j["decoder_sparse_step"] = 2; });
  EXPECT_EQ(c.moe_layer_ids, (std::vector<int>{1, 3}));
}

TEST(ModelConfig, RopeThetaSpellingsAgree) {
  const auto c = load_edited("qwen3-moe-tiny", [](auto& j) {
    j.erase("rope_theta");
    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 5e5}};
  });
  EXPECT_DOUBLE_EQ(c.rope_theta, 5e5);
}

TEST(ModelConfig, UnknownArchitectureListsSupported) {
  const std::string msg = error_of("qwen3-moe-tiny", [](auto& j) { j["architectures"] = {"LlamaForCausalLM"}; });
  EXPECT_NE(msg.find("LlamaForCausalLM"), std::string::npos) << msg;
  for (const char* name : {"Qwen3MoeForCausalLM", "MixtralForCausalLM", "Qwen2MoeForCausalLM"})
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
}

TEST(ModelConfig, UnsupportedRopeScaling) {
  std::string msg = error_of("qwen3-moe-tiny", [](auto& j) { j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4}}; });
  EXPECT_NE(msg.find("yarn"), std::string::npos) << msg;
  EXPECT_NE(msg.find("supported"), std::string::npos) << msg;
  msg = error_of("mixtral-tiny", [](auto& j) { j["rope_parameters"]["rope_type"] = "linear"; });
  EXPECT_NE(msg.find("linear"), std::string::npos) << msg;
}

TEST(ModelConfig, MissingFieldIsNamed) {
  const std::string msg = error_of("mixtral-tiny", [](auto& j) { j.erase("num_local_experts"); });
  EXPECT_NE(msg.find("num_local_experts"), std::string::npos) << msg;
}

TEST(ModelConfig, SlidingWindowRefused) {
  const std::string msg = error_of("mixtral-tiny", [](auto& j) { j["sliding_window"] = 4096; });
  EXPECT_NE(msg.find("sliding-window"), std::string::npos) << msg;
}

// Found by fuzz_model_config: a number beyond a double is valid JSON text that the parser refuses
// with an exception of another kind, which escaped as something other than a moe::Error.
TEST(ModelConfig, NumberBeyondADoubleIsAnErrorNamingTheFile) {
  std::string text = read_text_file(fixture("qwen3-moe-tiny") + "/config.json");
  text.insert(text.find('{') + 1, "\"huge\": 8888884E44444, ");
  const fs::path dir = fs::temp_directory_path() / ("moe_cfg_huge_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << text;
  std::string message = "no error";
  try {
    load_model_config(dir.string());
  } catch (const Error& e) {
    message = e.what();
  }
  fs::remove_all(dir);
  EXPECT_NE(message.find("config.json is not valid JSON"), std::string::npos) << message;
  EXPECT_NE(message.find("8888884E44444"), std::string::npos) << message;
}

// Every size and scale is range- and type-checked with the field named, before anything divides by
// it or sizes a buffer with it (zero heads used to end the process with SIGFPE).
TEST(ModelConfig, OutOfRangeAndWronglyTypedFieldsAreNamed) {
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& c) { c["num_key_value_heads"] = 0; }, "num_key_value_heads"},
      {[](nlohmann::json& c) { c["num_attention_heads"] = 0; }, "num_attention_heads"},
      {[](nlohmann::json& c) { c["num_hidden_layers"] = 0; }, "num_hidden_layers"},
      {[](nlohmann::json& c) { c["hidden_size"] = -64; }, "hidden_size"},
      {[](nlohmann::json& c) { c["vocab_size"] = -1; }, "vocab_size"},
      {[](nlohmann::json& c) { c["moe_intermediate_size"] = -5; }, "moe_intermediate_size"},
      {[](nlohmann::json& c) { c["max_position_embeddings"] = 0; }, "max_position_embeddings"},
      {[](nlohmann::json& c) { c["rms_norm_eps"] = -1; }, "rms_norm_eps"},
      {[](nlohmann::json& c) { c["hidden_size"] = 32.5; }, "hidden_size"},
      {[](nlohmann::json& c) { c["rope_theta"] = "large"; }, "rope_theta"},
      {[](nlohmann::json& c) { c["rope_theta"] = 0; }, "rope_theta"},
      {[](nlohmann::json& c) { c["tie_word_embeddings"] = "yes"; }, "tie_word_embeddings"},
      {[](nlohmann::json& c) { c["norm_topk_prob"] = "yes"; }, "config.json"},
      // Too large: the layer list would take minutes and gigabytes, the KV bytes per token would
      // wrap 64 bits (to 0: a division by zero), expert ids would not fit the int16 routing rows.
      {[](nlohmann::json& c) { c["num_hidden_layers"] = 2000000000; }, "'num_hidden_layers' must be in [1, 4096]"},
      {[](nlohmann::json& c) { c["num_hidden_layers"] = 4294967297; }, "num_hidden_layers"},  // would wrap to 1
      {[](nlohmann::json& c) { c["head_dim"] = 2097152; }, "head_dim"},
      {[](nlohmann::json& c) { c["num_experts"] = 40000; }, "num_experts"},
      {[](nlohmann::json& c) { c["vocab_size"] = 3000000000; }, "vocab_size"},
      {[](nlohmann::json& c) { c["hidden_size"] = 1099511627776; }, "hidden_size"},
  };
  for (const auto& [edit, field] : cases) {
    const std::string error = error_of("qwen3-moe-tiny", edit);
    EXPECT_NE(error.find(field), std::string::npos) << field << ": " << error;
  }
}

TEST(DeepseekV3Config, ReadsLatentAttentionSizesYarnScalingAndAQProjWithoutLora) {
  const ModelConfig plain = load_model_config(std::string(MOE_TEST_DATA_DIR) + "/deepseek-v3-tiny");
  ASSERT_TRUE(plain.mla);
  EXPECT_EQ(plain.mla->q_lora_rank, 32);
  EXPECT_EQ(plain.mla->kv_lora_rank, 16);
  EXPECT_EQ(plain.mla->qk_head_dim(), 24);
  EXPECT_FALSE(plain.yarn);
  const ModelConfig c = load_edited("deepseek-v3-tiny", [](nlohmann::json& j) {
    j["q_lora_rank"] = nullptr;
    j["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 10000.0}, {"factor", 40.0}, {"mscale", 1.0},
                            {"mscale_all_dim", 1.0}, {"original_max_position_embeddings", 4096}};
  });
  EXPECT_EQ(c.mla->q_lora_rank, 0);
  ASSERT_TRUE(c.yarn);
  EXPECT_DOUBLE_EQ(c.yarn->factor, 40.0);
  EXPECT_DOUBLE_EQ(c.yarn->mscale_all_dim, 1.0);
  EXPECT_EQ(c.yarn->original_max_position_embeddings, 4096);
  const MlaTensorNames names = model_plan(c).layers[0].mla;
  EXPECT_EQ(names.q_weight, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_TRUE(names.q_a_weight.empty());
  const std::string odd = error_of("deepseek-v3-tiny", [](nlohmann::json& j) { j["qk_rope_head_dim"] = 7; });
  EXPECT_NE(odd.find("qk_rope_head_dim"), std::string::npos) << odd;
}

}  // namespace
}  // namespace moe
