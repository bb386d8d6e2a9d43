#include "model/eagle3_config.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "model/architectures/llama_eagle3.h"

namespace moe {
namespace {

constexpr int64_t kMaxSize = int64_t{1} << 24;  // a hidden size, vocabulary or width beyond any model

int64_t size_field(const nlohmann::json& config, const char* key, int64_t fallback, const std::string& path) {
  const bool given = config.contains(key) && !config[key].is_null();
  if (!given && fallback < 0) throw Error(path + ": '" + key + "' is missing");
  const int64_t value = given ? config[key].get<int64_t>() : fallback;
  if (value < 1 || value > kMaxSize)
    throw Error(path + ": '" + key + "' must lie in [1, " + std::to_string(kMaxSize) + "], got " +
                std::to_string(value));
  return value;
}

Eagle3Config parse(const nlohmann::json& config, const std::string& path) {
  const auto archs = config.value("architectures", std::vector<std::string>{});
  if (archs.empty() || archs[0] != kEagle3Architecture)
    throw Error(path + ": not an EAGLE-3 head (config.json \"architectures\" must be [\"" +
                std::string(kEagle3Architecture) + "\"], SGLang's layout)");
  Eagle3Config head;
  ModelConfig& c = head.layer;
  c.architecture = archs[0];
  c.vocab_size = size_field(config, "vocab_size", -1, path);
  c.hidden_size = size_field(config, "hidden_size", -1, path);
  c.intermediate_size = size_field(config, "intermediate_size", -1, path);
  c.num_attention_heads = static_cast<int>(size_field(config, "num_attention_heads", -1, path));
  c.num_key_value_heads = static_cast<int>(size_field(config, "num_key_value_heads", c.num_attention_heads, path));
  c.head_dim = static_cast<int>(size_field(config, "head_dim", c.hidden_size / c.num_attention_heads, path));
  c.rotary_dim = c.head_dim;
  c.num_hidden_layers = static_cast<int>(size_field(config, "num_hidden_layers", 1, path));
  if (c.num_hidden_layers != 1)
    throw Error(path + ": EAGLE-3 heads of " + std::to_string(c.num_hidden_layers) +
                " decoder layers are not supported (num_hidden_layers must be 1)");
  if (c.num_attention_heads % c.num_key_value_heads != 0 || c.head_dim % 2 != 0)
    throw Error(path + ": num_attention_heads must be a multiple of num_key_value_heads, and head_dim even");
  c.rms_norm_eps = config.value("rms_norm_eps", 1e-6);
  c.rope_theta = config.value("rope_theta", 10000.0);
  c.tie_word_embeddings = config.value("tie_word_embeddings", false);
  c.max_position_embeddings = config.value("max_position_embeddings", int64_t{32768});
  if (config.contains("rope_scaling") && !config["rope_scaling"].is_null())
    throw Error(path + ": an EAGLE-3 head with rope_scaling is not supported (plain rotary embeddings only)");
  head.draft_vocab_size = size_field(config, "draft_vocab_size", c.vocab_size, path);
  head.target_hidden_size = size_field(config, "target_hidden_size", c.hidden_size, path);
  if (config.contains("eagle_config") && config["eagle_config"].is_object()) {
    const nlohmann::json& eagle = config["eagle_config"];
    if (eagle.contains("eagle_aux_hidden_state_layer_ids") && !eagle["eagle_aux_hidden_state_layer_ids"].is_null())
      head.aux_layer_ids = eagle["eagle_aux_hidden_state_layer_ids"].get<std::vector<int>>();
    if (!eagle.value("use_aux_hidden_state", true))
      throw Error(path + ": eagle_config.use_aux_hidden_state false (an EAGLE-1/2 head) is not supported");
  }
  if (!head.aux_layer_ids.empty() && head.aux_layer_ids.size() != 3)
    throw Error(path + ": eagle_config.eagle_aux_hidden_state_layer_ids must name 3 target layers, got " +
                std::to_string(head.aux_layer_ids.size()));
  return head;
}

}  // namespace

Eagle3Config load_eagle3_config(const std::string& dir) {
  const std::string path = dir + "/config.json";
  const nlohmann::json config = read_json_file(path);
  if (!config.is_object()) throw Error(path + ": not a JSON object");
  try {
    return parse(config, path);
  } catch (const nlohmann::json::exception& e) {  // a wrongly typed field
    throw Error(path + ": " + e.what());
  }
}

std::vector<int> eagle3_captured_layers(const Eagle3Config& head, int target_layers) {
  std::vector<int> layers;
  if (head.aux_layer_ids.empty())
    layers = {2, target_layers / 2, target_layers - 3};
  else
    for (int id : head.aux_layer_ids) layers.push_back(id + 1);
  for (int layer : layers)
    if (layer < 0 || layer >= target_layers) {
      const std::string which = head.aux_layer_ids.empty()
                                    ? "SGLang's default layers (the inputs of layers 2, L/2 and L - 3)"
                                    : "eagle_config.eagle_aux_hidden_state_layer_ids";
      throw Error("the EAGLE-3 head reads " + which + ", which a target of " + std::to_string(target_layers) +
                  " decoder layers does not have (ids must lie in [-1, " + std::to_string(target_layers - 2) + "])");
    }
  return layers;
}

}  // namespace moe
