#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>
#include <utility>

#include "common/error.h"
#include "common/json_file.h"
#include "model/architecture.h"

namespace moe {
namespace {

// Whether a JSON integer lies within T's range (4294967297 read as an int would wrap to 1).
template <typename T>
bool fits(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  const int64_t v = value.get<int64_t>();
  return v >= static_cast<int64_t>(std::numeric_limits<T>::min()) && v <= static_cast<int64_t>(std::numeric_limits<T>::max());
}

// Whether `value` holds a T exactly: an integer field refuses 32.5 (which nlohmann would truncate).
template <typename T>
bool holds(const nlohmann::json& value) {
  if constexpr (std::is_same_v<T, bool>) return value.is_boolean();
  else if constexpr (std::is_integral_v<T>) return value.is_number_integer() && fits<T>(value);
  else if constexpr (std::is_floating_point_v<T>) return value.is_number();
  else return true;  // containers: get<T> checks
}

template <typename T>
T read_field(const nlohmann::json& config, const char* key, const std::string& path) {
  const nlohmann::json& value = config[key];
  try {
    if (holds<T>(value)) return value.get<T>();
  } catch (const nlohmann::json::exception&) {
  }
  throw Error(path + ": field '" + key + "' has the wrong type (" + value.type_name() + ")");
}

template <typename T>
T required(const nlohmann::json& config, const char* key, const std::string& path) {
  if (!config.contains(key) || config[key].is_null()) throw Error(path + ": missing required field '" + key + "'");
  return read_field<T>(config, key, path);
}

template <typename T>
T optional_field(const nlohmann::json& config, const char* key, T fallback, const std::string& path) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  return read_field<T>(config, key, path);
}

// Upper bounds far above any published model, low enough that every size the engine derives (KV
// bytes per token, weight byte counts) fits in 64 bits, and that token ids fit in int32 and expert
// ids in the int16 routing rows.
constexpr int64_t kMaxDimension = int64_t{1} << 20;         // hidden_size
constexpr int64_t kMaxIntermediate = int64_t{1} << 24;      // the MLP widths
constexpr int64_t kMaxLayersOrHeads = 4096;
constexpr int64_t kMaxHeadDim = 65536;
constexpr int64_t kMaxExperts = 32767;
constexpr int64_t kMaxInt32 = 2147483647;

void check_bounds(const std::string& path, const char* key, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high)
    throw Error(path + ": '" + key + "' must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " +
                std::to_string(value));
}

// Every size and scale in range, each named, before anything divides by one or sizes a buffer
// (num_key_value_heads = 0 used to end the process with SIGFPE).
void check_ranges(const ModelConfig& c, const std::string& path) {
  check_bounds(path, "vocab_size", c.vocab_size, 1, kMaxInt32);
  check_bounds(path, "hidden_size", c.hidden_size, 1, kMaxDimension);
  check_bounds(path, "num_hidden_layers", c.num_hidden_layers, 1, kMaxLayersOrHeads);
  check_bounds(path, "num_key_value_heads", c.num_key_value_heads, 1, kMaxLayersOrHeads);
  check_bounds(path, "head_dim", c.head_dim, 1, kMaxHeadDim);
  check_bounds(path, "num_experts", c.num_experts, 1, kMaxExperts);
  check_bounds(path, "moe_intermediate_size", c.moe_intermediate_size, 1, kMaxIntermediate);
  check_bounds(path, "max_position_embeddings", c.max_position_embeddings, 1, kMaxInt32);
  check_bounds(path, "intermediate_size", c.intermediate_size, 0, kMaxIntermediate);
  check_bounds(path, "shared_expert_intermediate_size", c.shared_expert_intermediate_size, 0, kMaxIntermediate);
  if (!(c.rms_norm_eps > 0.0 && std::isfinite(c.rms_norm_eps)))
    throw Error(path + ": 'rms_norm_eps' must be a positive number, got " + std::to_string(c.rms_norm_eps));
  if (!(c.rope_theta > 0.0 && std::isfinite(c.rope_theta)))
    throw Error(path + ": 'rope_theta' must be a positive number, got " + std::to_string(c.rope_theta));
}

// Plain rotary embeddings, or YaRN's (multi-head latent attention only, checked once the family has
// said which attention it runs); any other scaling must not run silently wrong.
std::optional<YarnScaling> read_rope_scaling(const nlohmann::json& config, int64_t max_position_embeddings,
                                             const std::string& path) {
  std::optional<YarnScaling> yarn;
  auto read = [&](const char* where) {
    if (!config.contains(where) || config[where].is_null()) return;
    const nlohmann::json& node = config[where];
    const std::string at = path + ": " + where;
    const std::string type = node.value("rope_type", node.value("type", std::string("default")));
    if (type == "default") return;
    if (type != "yarn")
      throw Error(path + ": unsupported " + where + " type '" + type + "'; supported: none, \"default\", \"yarn\"");
    YarnScaling y;
    y.factor = required<double>(node, "factor", at);
    y.original_max_position_embeddings =
        optional_field<int64_t>(node, "original_max_position_embeddings", max_position_embeddings, at);
    y.beta_fast = optional_field<double>(node, "beta_fast", 32.0, at);
    y.beta_slow = optional_field<double>(node, "beta_slow", 1.0, at);
    y.mscale = optional_field<double>(node, "mscale", 0.0, at);
    y.mscale_all_dim = optional_field<double>(node, "mscale_all_dim", 0.0, at);
    if (node.contains("attention_factor") && !node["attention_factor"].is_null())
      y.attention_factor = read_field<double>(node, "attention_factor", at);
    y.truncate = optional_field<bool>(node, "truncate", true, at);
    if (!(y.factor >= 1.0 && std::isfinite(y.factor))) throw Error(at + ": 'factor' must be a number >= 1");
    check_bounds(at, "original_max_position_embeddings", y.original_max_position_embeddings, 1, kMaxInt32);
    yarn = y;
  };
  read("rope_scaling");
  read("rope_parameters");
  return yarn;
}

// Multi-head latent attention's sizes in range; its rotary part is rotated in pairs.
void check_mla(const MlaConfig& m, const std::string& path) {
  check_bounds(path, "q_lora_rank", m.q_lora_rank, 0, kMaxDimension);
  check_bounds(path, "kv_lora_rank", m.kv_lora_rank, 1, kMaxDimension);
  check_bounds(path, "qk_nope_head_dim", m.qk_nope_head_dim, 0, kMaxHeadDim);
  check_bounds(path, "qk_rope_head_dim", m.qk_rope_head_dim, 2, kMaxHeadDim);
  check_bounds(path, "v_head_dim", m.v_head_dim, 1, kMaxHeadDim);
  if (m.qk_rope_head_dim % 2 != 0) throw Error(path + ": qk_rope_head_dim must be even for rotary embeddings");
}

// Transformers reads partial_rotary_factor from rope_parameters, or the top level of older configs.
double read_partial_rotary_factor(const nlohmann::json& config, const std::string& path) {
  if (config.contains("rope_parameters") && config["rope_parameters"].is_object() &&
      config["rope_parameters"].contains("partial_rotary_factor"))
    return optional_field<double>(config["rope_parameters"], "partial_rotary_factor", 1.0, path + ": rope_parameters");
  return optional_field<double>(config, "partial_rotary_factor", 1.0, path);
}

double read_rope_theta(const nlohmann::json& config, const std::string& path) {
  if (config.contains("rope_theta")) return optional_field<double>(config, "rope_theta", 10000.0, path);
  if (config.contains("rope_parameters") && config["rope_parameters"].is_object())
    return optional_field<double>(config["rope_parameters"], "rope_theta", 10000.0, path + ": rope_parameters");
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

namespace {

ModelConfig parse_model_config(const nlohmann::json& config, const std::string& path) {
  ModelConfig c;
  const auto archs = required<std::vector<std::string>>(config, "architectures", path);
  if (archs.empty()) throw Error(path + ": 'architectures' is empty");
  const Architecture& arch = find_architecture(archs[0]);
  c.architecture = archs[0];
  c.vocab_size = required<int64_t>(config, "vocab_size", path);
  c.hidden_size = required<int64_t>(config, "hidden_size", path);
  c.intermediate_size = optional_field<int64_t>(config, "intermediate_size", 0, path);
  c.num_hidden_layers = required<int>(config, "num_hidden_layers", path);
  // Bounded before an architecture lists the MoE layers, one by one.
  check_bounds(path, "num_hidden_layers", c.num_hidden_layers, 1, kMaxLayersOrHeads);
  c.num_attention_heads = required<int>(config, "num_attention_heads", path);
  c.num_key_value_heads = optional_field<int>(config, "num_key_value_heads", c.num_attention_heads, path);
  check_bounds(path, "num_attention_heads", c.num_attention_heads, 1, kMaxLayersOrHeads);
  c.head_dim = optional_field<int>(config, "head_dim", static_cast<int>(c.hidden_size / c.num_attention_heads), path);
  const char* experts_key = config.contains("num_experts")         ? "num_experts"
                            : config.contains("n_routed_experts") ? "n_routed_experts"
                                                                  : "num_local_experts";
  c.num_experts = required<int>(config, experts_key, path);
  c.rotary_dim = static_cast<int>(c.head_dim * read_partial_rotary_factor(config, path));
  c.num_experts_per_tok = required<int>(config, "num_experts_per_tok", path);
  c.moe_intermediate_size = optional_field<int64_t>(config, "moe_intermediate_size", c.intermediate_size, path);
  c.tie_word_embeddings = optional_field<bool>(config, "tie_word_embeddings", false, path);
  c.rms_norm_eps = optional_field<double>(config, "rms_norm_eps", 1e-6, path);
  c.max_position_embeddings = optional_field<int64_t>(config, "max_position_embeddings", 32768, path);
  c.rope_theta = read_rope_theta(config, path);
  check_sliding_window(config, path);
  c.gptq = read_gptq_config(config, path);
  arch.read_config(config, c);
  check_ranges(c, path);
  c.yarn = read_rope_scaling(config, c.max_position_embeddings, path);
  if (c.mla) check_mla(*c.mla, path);
  if (c.yarn && !c.mla)
    throw Error(path + ": \"yarn\" rotary scaling is supported for multi-head latent attention only");

  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(path + ": num_attention_heads must be a multiple of num_key_value_heads");
  if (c.num_experts_per_tok < 1 || c.num_experts_per_tok > c.num_experts)
    throw Error(path + ": num_experts_per_tok must be in [1, num_experts]");
  if (c.rotary_dim < 2 || c.rotary_dim > c.head_dim || c.rotary_dim % 2 != 0)
    throw Error(path + ": the rotary dims (head_dim · partial_rotary_factor = " + std::to_string(c.rotary_dim) +
                ") must be even and in [2, head_dim]");
  return c;
}

}  // namespace

ModelConfig load_model_config(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  const nlohmann::json config = read_json_file(path);
  if (!config.is_object()) throw Error(path + ": not a JSON object");
  try {
    return parse_model_config(config, path);
  } catch (const nlohmann::json::exception& e) {  // a wrongly typed field an architecture reads
    throw Error(path + ": " + e.what());
  }
}

namespace {

// Every field of a config as config.json names it, with its value as text (doubles in full).
std::vector<std::pair<const char*, std::string>> described_fields(const ModelConfig& c) {
  auto text = [](auto value) {
    std::ostringstream out;
    out.precision(17);
    out << std::boolalpha << value;
    return out.str();
  };
  std::string moe_layers;
  for (int layer : c.moe_layer_ids) {
    if (!moe_layers.empty()) moe_layers += ',';
    moe_layers += std::to_string(layer);
  }
  return {{"architectures", c.architecture},
          {"vocab_size", text(c.vocab_size)},
          {"hidden_size", text(c.hidden_size)},
          {"intermediate_size", text(c.intermediate_size)},
          {"moe_intermediate_size", text(c.moe_intermediate_size)},
          {"shared_expert_intermediate_size", text(c.shared_expert_intermediate_size)},
          {"num_hidden_layers", text(c.num_hidden_layers)},
          {"num_attention_heads", text(c.num_attention_heads)},
          {"num_key_value_heads", text(c.num_key_value_heads)},
          {"head_dim", text(c.head_dim)},
          {"rotary dims", text(c.rotary_dim)},
          {"num_experts", text(c.num_experts)},
          {"num_experts_per_tok", text(c.num_experts_per_tok)},
          {"norm_topk_prob", text(c.norm_topk_prob)},
          {"routing", c.routing == RoutingKind::Softmax ? "softmax" : "sigmoid grouped"},
          {"n_group", text(c.n_group)},
          {"topk_group", text(c.topk_group)},
          {"routed_scaling_factor", text(c.routed_scaling_factor)},
          {"attention_bias", text(c.attention_bias)},
          {"qk_norm", text(c.qk_norm)},
          {"tie_word_embeddings", text(c.tie_word_embeddings)},
          {"rope_theta", text(c.rope_theta)},
          {"rms_norm_eps", text(c.rms_norm_eps)},
          {"max_position_embeddings", text(c.max_position_embeddings)},
          {"rope_scaling factor", text(c.yarn ? c.yarn->factor : 1.0)},
          {"kv_lora_rank", text(c.mla ? c.mla->kv_lora_rank : 0)},
          {"q_lora_rank", text(c.mla ? c.mla->q_lora_rank : 0)},
          {"qk_nope_head_dim", text(c.mla ? c.mla->qk_nope_head_dim : 0)},
          {"qk_rope_head_dim", text(c.mla ? c.mla->qk_rope_head_dim : 0)},
          {"v_head_dim", text(c.mla ? c.mla->v_head_dim : 0)},
          {"MoE layers", moe_layers}};
}

}  // namespace

std::optional<std::string> config_mismatch(const ModelConfig& serving, const ModelConfig& loaded) {
  const auto expected = described_fields(serving);
  const auto found = described_fields(loaded);
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i].second != found[i].second)
      return std::string(expected[i].first) + " is " + found[i].second + " there, " + expected[i].second + " here";
  }
  return std::nullopt;
}

}  // namespace moe
