#include "api/native_calls.h"

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/request_fields.h"
#include "common/weight_group_call.h"

namespace moe::api {
namespace {

using nlohmann::json;

// One value or a list of them, read element by element; `batched` says which was sent.
template <class T>
std::vector<T> one_or_list(const json& value, const std::string& path, bool list, bool& batched) {
  std::vector<T> out;
  batched = list;
  if (!list) {
    read_value(value, path, out.emplace_back());
    return out;
  }
  if (value.empty()) throw ApiError::invalid_field(path, "must not be an empty list");
  for (size_t i = 0; i < value.size(); ++i) read_value(value[i], element_path(path, i), out.emplace_back());
  return out;
}

// A list of one value per element, or the single value, as the call was sent.
template <class T>
json one_or_list_json(const std::vector<T>& values, bool batched) {
  return batched ? json(values) : json(values.front());
}

// The fields every group call shares (group_name; flush_cache where SGLang sends it, true only),
// then the call's checks; any field not read is refused.
msg::UpdateWeights checked_group_call(const FieldReader& root, msg::UpdateWeights update) {
  msg::WeightGroupCall& call = update.group;
  root.read("group_name", call.group_name);
  static constexpr IgnoredField kIgnored[] = {{"flush_cache", is_true}};
  root.reject_unread(kIgnored);
  if (const auto problem = check_weight_group_call(call)) throw ApiError::invalid_field(problem->field, problem->why);
  return update;
}

}  // namespace

msg::UpdateWeights parse_update_weights(const json& body) {
  const FieldReader root(body, "");
  msg::UpdateWeights update;
  if (!root.read("model_path", update.model_path)) throw ApiError::invalid_field("model_path", "is required");
  if (update.model_path.empty()) throw ApiError::invalid_field("model_path", "must not be empty");
  root.read("weight_version", update.weight_version);
  root.read("abort_all_requests", update.abort_all_requests);
  return update;
}

json weights_updated_json(const msg::WeightsUpdated& answer) {
  return {{"success", answer.success}, {"message", answer.message}, {"weight_version", answer.weight_version}};
}

int weights_updated_status(const msg::WeightsUpdated& answer) { return answer.success ? 200 : 400; }

msg::PauseMode parse_pause_generation(std::string_view body) {
  msg::PauseMode mode = msg::PauseMode::Abort;
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return mode;
  const json parsed = parse_json_body(body);
  FieldReader(parsed, "").read("mode", mode);
  return mode;
}

msg::UpdateWeights parse_memory_occupation(std::string_view body, msg::MemoryAction action) {
  msg::UpdateWeights update;
  update.memory = action;
  std::optional<std::vector<msg::MemoryTag>> tags;
  if (body.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    const json parsed = parse_json_body(body);
    const FieldReader root(parsed, "");
    root.read("tags", tags);
    root.reject_unread();
  }
  msg::set_memory_tags(update, tags);
  return update;
}

json generation_control_json(const std::string& message) { return {{"message", message}, {"status", "ok"}}; }

WeightVersionCall parse_update_weight_version(const json& body) {
  const FieldReader root(body, "");
  WeightVersionCall call;
  if (!root.read("new_version", call.new_version)) throw ApiError::invalid_field("new_version", "is required");
  if (call.new_version.empty()) throw ApiError::invalid_field("new_version", "must not be empty");
  root.read("abort_all_requests", call.abort_all_requests);
  return call;
}

json weight_version_updated_json(const std::string& new_version) {
  return {{"success", true}, {"message", "Weight version updated to " + new_version}, {"new_version", new_version}};
}

json weight_version_json(const std::string& weight_version) { return {{"weight_version", weight_version}}; }

msg::UpdateWeights parse_init_weights_update_group(const json& body) {
  const FieldReader root(body, "");
  msg::UpdateWeights update = weight_group_update(msg::WeightGroupAction::Join);
  msg::WeightGroupCall& call = update.group;
  if (!root.read("master_address", call.master_address)) throw ApiError::invalid_field("master_address", "is required");
  if (!root.read("master_port", call.master_port)) throw ApiError::invalid_field("master_port", "is required");
  if (!root.read("rank_offset", call.rank_offset)) throw ApiError::invalid_field("rank_offset", "is required");
  if (!root.read("world_size", call.world_size)) throw ApiError::invalid_field("world_size", "is required");
  std::string backend = "nccl";
  root.read("backend", backend);
  if (backend != "nccl") throw ApiError::invalid_field("backend", "must be \"nccl\" (the only backend served)");
  return checked_group_call(root, std::move(update));
}

msg::UpdateWeights parse_update_weights_from_distributed(const json& body) {
  const FieldReader root(body, "");
  msg::UpdateWeights update = weight_group_update(msg::WeightGroupAction::Receive);
  msg::WeightGroupCall& call = update.group;
  if (!root.read("names", call.names)) throw ApiError::invalid_field("names", "is required");
  if (!root.read("dtypes", call.dtypes)) throw ApiError::invalid_field("dtypes", "is required");
  if (!root.read("shapes", call.shapes)) throw ApiError::invalid_field("shapes", "is required");
  root.read("weight_version", update.weight_version);
  root.read("abort_all_requests", update.abort_all_requests);
  if (root.find("load_format") != nullptr)
    throw ApiError::invalid_field("load_format", "must be null: tensors are received one broadcast each, in the order "
                                                 "of `names` (SGLang's default)");
  return checked_group_call(root, std::move(update));
}

msg::UpdateWeights parse_destroy_weights_update_group(const json& body) {
  const FieldReader root(body, "");
  return checked_group_call(root, weight_group_update(msg::WeightGroupAction::Leave));
}

AbortCall parse_abort_request(const json& body) {
  const FieldReader root(body, "");
  AbortCall call;
  root.read("abort_all", call.all);
  const bool has_rid = root.read("rid", call.rid);
  if (call.all == has_rid) throw ApiError::bad_request("give either `rid` or `\"abort_all\": true`");
  if (has_rid && call.rid.empty()) throw ApiError::invalid_field("rid", "must not be empty");
  return call;
}

TokenizeCall parse_tokenize(const json& body) {
  const FieldReader root(body, "");
  const json* text = root.find("text");
  const json* prompt = root.find("prompt");
  if ((text != nullptr) == (prompt != nullptr)) throw ApiError::bad_request("give one of `text` and `prompt`");
  const json& value = text != nullptr ? *text : *prompt;
  TokenizeCall call;
  const std::string name = text != nullptr ? "text" : "prompt";
  call.texts = one_or_list<std::string>(value, name, value.is_array(), call.batched);
  for (size_t i = 0; i < call.texts.size(); ++i) call.fields.push_back(call.batched ? element_path(name, i) : name);
  return call;
}

json tokenize_json(const std::vector<std::vector<int32_t>>& tokens, bool batched, int64_t max_model_len) {
  std::vector<size_t> counts;
  for (const std::vector<int32_t>& ids : tokens) counts.push_back(ids.size());
  return {{"tokens", one_or_list_json(tokens, batched)},
          {"count", one_or_list_json(counts, batched)},
          {"max_model_len", max_model_len}};
}

DetokenizeCall parse_detokenize(const json& body) {
  const FieldReader root(body, "");
  const json* tokens = root.find("tokens");
  if (tokens == nullptr) throw ApiError::invalid_field("tokens", "is required");
  DetokenizeCall call;
  const bool list = tokens->is_array() && !tokens->empty() && tokens->front().is_array();
  call.tokens = one_or_list<std::vector<int32_t>>(*tokens, "tokens", list, call.batched);
  for (size_t i = 0; i < call.tokens.size(); ++i) call.fields.push_back(list ? element_path("tokens", i) : "tokens");
  return call;
}

json detokenize_json(const std::vector<std::string>& texts, bool batched) {
  return {{"text", one_or_list_json(texts, batched)}};
}

json model_info_json(const ModelInfo& info) {
  return {{"model_path", info.model_path},
          {"tokenizer_path", info.tokenizer_path},
          {"is_generation", true},
          {"weight_version", info.weight_version},
          {"architecture", info.architecture},
          {"num_moe_layers", info.num_moe_layers},
          {"num_experts", info.num_experts},
          {"top_k", info.top_k},
          {"max_model_len", info.max_model_len}};
}

}  // namespace moe::api
