#include "model/model_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "model/architecture.h"

namespace moe {
namespace {

template <typename T>
T required(const nlohmann::json& config, const char* key, const std::string& path) {
  if (!config.contains(key) || config[key].is_null()) throw Error(path + ": missing required field '" + key + "'");
  try {
    return config[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(path + ": field '" + key + "' has the wrong type");
  }
}

// Only un-scaled rotary embeddings are implemented; a scaled checkpoint must not run silently wrong.
void check_rope_scaling(const nlohmann::json& config, const std::string& path) {
  auto check = [&](const nlohmann::json& node, const char* where) {
    if (node.is_null()) return;
    std::string type = node.value("rope_type", node.value("type", std::string("default")));
    if (type != "default")
      throw Error(path + ": unsupported " + where + " type '" + type + "'; supported: none, \"default\"");
  };
  if (config.contains("rope_scaling")) check(config["rope_scaling"], "rope_scaling");
  if (config.contains("rope_parameters")) check(config["rope_parameters"], "rope_parameters");
}

double read_rope_theta(const nlohmann::json& config) {
  if (config.contains("rope_theta") && config["rope_theta"].is_number()) return config["rope_theta"].get<double>();
  if (config.contains("rope_parameters") && config["rope_parameters"].is_object())
    return config["rope_parameters"].value("rope_theta", 10000.0);
  return 10000.0;
}

// Sliding-window attention is not implemented; configs that enable it are refused.
void check_sliding_window(const nlohmann::json& config, const std::string& path) {
  const bool qwen_style = config.contains("use_sliding_window");
  if (qwen_style ? config.value("use_sliding_window", false)
                 : (config.contains("sliding_window") && !config["sliding_window"].is_null()))
    throw Error(path + ": sliding-window attention is not supported; supported: full attention");
}

}  // namespace

int ModelConfig::moe_index(int layer) const {
  auto it = std::find(moe_layer_ids.begin(), moe_layer_ids.end(), layer);
  return it == moe_layer_ids.end() ? -1 : static_cast<int>(it - moe_layer_ids.begin());
}

ModelConfig load_model_config(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  const nlohmann::json config = read_json_file(path);
  if (!config.is_object()) throw Error(path + ": not a JSON object");
  ModelConfig c;
  const auto archs = required<std::vector<std::string>>(config, "architectures", path);
  if (archs.empty()) throw Error(path + ": 'architectures' is empty");
  const Architecture& arch = find_architecture(archs[0]);
  c.architecture = archs[0];
  c.vocab_size = required<int64_t>(config, "vocab_size", path);
  c.hidden_size = required<int64_t>(config, "hidden_size", path);
  c.intermediate_size = config.value("intermediate_size", int64_t{0});
  c.num_hidden_layers = required<int>(config, "num_hidden_layers", path);
  c.num_attention_heads = required<int>(config, "num_attention_heads", path);
  c.num_key_value_heads = config.value("num_key_value_heads", c.num_attention_heads);
  c.head_dim = config.contains("head_dim") && config["head_dim"].is_number()
                   ? config["head_dim"].get<int>()
                   : static_cast<int>(c.hidden_size / c.num_attention_heads);
  c.num_experts = config.contains("num_experts") ? required<int>(config, "num_experts", path)
                                                 : required<int>(config, "num_local_experts", path);
  c.num_experts_per_tok = required<int>(config, "num_experts_per_tok", path);
  c.moe_intermediate_size = config.value("moe_intermediate_size", c.intermediate_size);
  c.tie_word_embeddings = config.value("tie_word_embeddings", false);
  c.rms_norm_eps = config.value("rms_norm_eps", 1e-6);
  c.max_position_embeddings = config.value("max_position_embeddings", int64_t{32768});
  c.rope_theta = read_rope_theta(config);
  check_rope_scaling(config, path);
  check_sliding_window(config, path);
  arch.read_config(config, c);

  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(path + ": num_attention_heads must be a multiple of num_key_value_heads");
  if (c.num_experts_per_tok < 1 || c.num_experts_per_tok > c.num_experts)
    throw Error(path + ": num_experts_per_tok must be in [1, num_experts]");
  if (c.head_dim % 2 != 0) throw Error(path + ": head_dim must be even for rotary embeddings");
  return c;
}

}  // namespace moe
