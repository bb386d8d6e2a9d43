// SGLang's /generate request: one prompt or a batch, as `text` or `input_ids`.
#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/generation_call.h"
#include "api/request_fields.h"

namespace moe::api {
namespace {

using nlohmann::json;

// SGLang's /generate fields its clients commonly send that change nothing here.
constexpr IgnoredField kIgnoredInGenerate[] = {{"log_metrics", any_value}, {"return_hidden_states", is_false},
                                               {"lora_path", is_false}};
constexpr IgnoredField kIgnoredInSampling[] = {{"spaces_between_special_tokens", is_true}, {"no_stop_trim", is_false}};

// One request per prompt of `text` (a string or a list of strings); sets `batched` for a list.
std::vector<msg::GenerateRequest> text_prompts(const json& text, bool& batched) {
  std::vector<msg::GenerateRequest> requests;
  batched = text.is_array();
  if (!batched) {
    read_value(text, "text", requests.emplace_back().text.emplace());
    return requests;
  }
  for (size_t i = 0; i < text.size(); ++i) read_value(text[i], element_path("text", i), requests.emplace_back().text.emplace());
  return requests;
}

// One request per prompt of `input_ids` (a list of ids, or a list of such lists).
std::vector<msg::GenerateRequest> token_prompts(const json& ids, bool& batched) {
  std::vector<msg::GenerateRequest> requests;
  batched = ids.is_array() && !ids.empty() && ids.front().is_array();
  if (!batched) {
    read_value(ids, "input_ids", requests.emplace_back().input_ids.emplace());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      read_value(ids[i], element_path("input_ids", i), requests.emplace_back().input_ids.emplace());
    }
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].input_ids->empty()) {
      throw ApiError::invalid_field(batched ? element_path("input_ids", i) : "input_ids", "must not be empty");
    }
  }
  return requests;
}

std::vector<msg::GenerateRequest> prompts(const FieldReader& root, bool& batched) {
  const json* text = root.find("text");
  const json* ids = root.find("input_ids");
  if (text != nullptr && ids != nullptr) throw ApiError::bad_request("give only one of `text` and `input_ids`");
  if (text == nullptr && ids == nullptr) throw ApiError::bad_request("the request needs `text` or `input_ids`");
  std::vector<msg::GenerateRequest> requests = text ? text_prompts(*text, batched) : token_prompts(*ids, batched);
  if (requests.empty()) throw ApiError::invalid_field(text ? "text" : "input_ids", "must not be an empty list");
  return requests;
}

// A field that is either one value for every prompt or a list of one value per prompt.
const json& per_prompt(const json& value, const std::string& name, size_t prompt, size_t num_prompts) {
  if (!value.is_array()) return value;
  if (value.size() != num_prompts) {
    throw ApiError::invalid_field(name, "has " + std::to_string(value.size()) + " entries for " +
                                            std::to_string(num_prompts) + " prompts");
  }
  return value[prompt];
}

void read_sampling_params(const FieldReader& root, std::vector<msg::GenerateRequest>& requests) {
  const json* params = root.find("sampling_params");
  if (params == nullptr) return;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string path = params->is_array() ? element_path("sampling_params", i) : "sampling_params";
    const FieldReader reader(per_prompt(*params, "sampling_params", i, requests.size()), path);
    read_sampling_fields(reader, SamplingDialect::SGLang, requests[i].sampling, requests[i].field_names);
    reader.reject_unread(kIgnoredInSampling);
  }
}

// `rid`: one string for one prompt, or a list of one per prompt.
void read_rids(const FieldReader& root, bool batched, std::vector<msg::GenerateRequest>& requests) {
  const json* rid = root.find("rid");
  if (rid == nullptr) return;
  if (batched && !rid->is_array()) throw ApiError::invalid_field("rid", "must be a list of one id per prompt");
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string path = rid->is_array() ? element_path("rid", i) : "rid";
    read_value(per_prompt(*rid, "rid", i, requests.size()), path, requests[i].rid);
  }
}

// SGLang's logprob_start_len: with return_logprob, the prompt tokens' logprobs from that position
// on (-1, the default: none); one value, or a list of one per prompt. A start at or past the
// prompt's end is refused by the front door, which knows the prompt's length.
void read_logprob_start_len(const FieldReader& root, std::vector<msg::GenerateRequest>& requests) {
  const nlohmann::json* start = root.find("logprob_start_len");
  if (start == nullptr) return;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string path = start->is_array() ? element_path("logprob_start_len", i) : "logprob_start_len";
    read_value(per_prompt(*start, "logprob_start_len", i, requests.size()), path, requests[i].logprob_start_len);
    requests[i].field_names.logprob_start_len = path;
  }
}

// "stream_routed_experts": "cumulative" (default: the final chunk carries every row) or "delta".
bool stream_routing_is_delta(const FieldReader& root) {
  std::string form = "cumulative";
  root.read("stream_routed_experts", form);
  if (form != "cumulative" && form != "delta")
    throw ApiError::invalid_field("stream_routed_experts", "must be \"cumulative\" or \"delta\", got \"" + form + "\"");
  return form == "delta";
}

}  // namespace

GenerationCall parse_generate(const json& body) {
  const FieldReader root(body, "");
  GenerationCall call;
  call.api = ApiKind::Generate;
  call.requests = prompts(root, call.batched);
  root.read("stream", call.stream);
  call.stream_routing_delta = stream_routing_is_delta(root);
  msg::GenerateRequest shared;  // the fields every prompt of a batch shares
  root.read("return_logprob", shared.return_logprob);
  root.read("speculative", shared.speculative);
  root.read("top_logprobs_num", shared.top_logprobs_num);
  root.read("return_text_in_logprobs", call.text_in_logprobs);
  read_routing_fields(root, ApiKind::Generate, shared.routing);
  for (msg::GenerateRequest& request : call.requests) {
    request.stream = call.stream;
    request.return_logprob = shared.return_logprob;
    request.speculative = shared.speculative;
    request.top_logprobs_num = shared.top_logprobs_num;
    request.routing = shared.routing;
  }
  read_sampling_params(root, call.requests);
  read_logprob_start_len(root, call.requests);
  read_rids(root, call.batched, call.requests);
  root.reject_unread(kIgnoredInGenerate);
  return call;
}

}  // namespace moe::api
