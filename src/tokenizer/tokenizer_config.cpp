#include "tokenizer/tokenizer_config.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/json_file.h"
#include "tokenizer/tokenizer.h"

namespace moe::tokenizer {
namespace {

// DIR itself, or the folder of a file path given instead of a directory.
std::filesystem::path directory_of(const std::string& dir) {
  std::filesystem::path path(dir);
  return std::filesystem::is_regular_file(path) ? path.parent_path() : path;
}

// A named token: a plain string, an AddedToken object {"content": ...}, or null/absent ("").
std::string token_content(const nlohmann::json& config, const char* field) {
  const auto value = config.find(field);
  if (value == config.end() || value->is_null()) return "";
  if (value->is_string()) return value->get<std::string>();
  if (value->is_object() && value->contains("content")) return value->at("content").get<std::string>();
  throw Error(std::string("tokenizer_config.json: ") + field + " must be a string or {\"content\": ...}, got " +
              value->dump());
}

// chat_template as a string, or the one named "default" in a list of {name, template}.
std::string chat_template_of(const nlohmann::json& config) {
  const auto value = config.find("chat_template");
  if (value == config.end() || value->is_null()) return "";
  if (value->is_string()) return value->get<std::string>();
  if (value->is_array())
    for (const auto& named : *value)
      if (named.value("name", "") == "default") return named.value("template", "");
  return "";
}

}  // namespace

TokenizerConfig load_tokenizer_config(const std::string& dir) {
  const std::filesystem::path folder = directory_of(dir);
  const std::string path = (folder / "tokenizer_config.json").string();
  const nlohmann::json config = read_json_file(path);
  if (!config.is_object()) throw Error(path + ": expected a JSON object");
  try {
    TokenizerConfig result;
    result.chat_template = chat_template_of(config);
    // transformers >= 4.43 may save the template in its own file instead.
    const std::filesystem::path template_file = folder / "chat_template.jinja";
    if (result.chat_template.empty() && std::filesystem::is_regular_file(template_file))
      result.chat_template = read_text_file(template_file.string());
    result.bos_token = token_content(config, "bos_token");
    result.eos_token = token_content(config, "eos_token");
    result.pad_token = token_content(config, "pad_token");
    const auto add_bos = config.find("add_bos_token");
    result.add_bos_token = add_bos != config.end() && add_bos->is_boolean() && add_bos->get<bool>();
    return result;
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": " + e.what());
  }
}

namespace {

// The eos_token_id (an int or a list of them) of a JSON file in the model's directory; none when the
// file or the key is absent.
std::optional<std::vector<int32_t>> eos_ids_in(const std::string& file) {
  if (!file_exists(file)) return std::nullopt;
  const nlohmann::json json = read_json_file(file);
  const auto eos = json.find("eos_token_id");
  if (eos != json.end() && eos->is_number_integer()) return std::vector<int32_t>{eos->get<int32_t>()};
  if (eos == json.end() || !eos->is_array() || eos->empty()) return std::nullopt;
  std::vector<int32_t> ids;
  for (const auto& id : *eos) {
    if (!id.is_number_integer()) throw Error(file + ": eos_token_id holds a non-integer " + id.dump());
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

}  // namespace

std::vector<int32_t> resolve_eos_token_ids(const std::string& model_dir, const TokenizerConfig& config,
                                           const Tokenizer& tokenizer) {
  const std::string generation_config = (directory_of(model_dir) / "generation_config.json").string();
  if (!model_dir.empty())
    for (const std::string& file : {generation_config, (directory_of(model_dir) / "config.json").string()})
      if (auto ids = eos_ids_in(file)) return *ids;
  if (config.eos_token.empty())
    throw Error("no end-of-sequence token: neither " + generation_config +
                ", config.json nor tokenizer_config.json names one");
  const auto id = tokenizer.token_to_id(config.eos_token);
  if (!id) throw Error("eos_token '" + config.eos_token + "' of tokenizer_config.json is not in the vocabulary");
  return {*id};
}

}  // namespace moe::tokenizer
