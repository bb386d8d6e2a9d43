#include "serving/http_api.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace moe::bench {
namespace {

using nlohmann::json;

// How much of an unreadable body or event goes into a message.
constexpr size_t kQuotedBytes = 200;

// The message of an {"error": ...} object: its `message`, or the whole error as JSON.
std::string error_message(const json& error) {
  if (error.is_object() && error.contains("message") && error["message"].is_string()) return error["message"];
  return error.dump();
}

}  // namespace

HttpApi parse_http_api(const std::string& name) {
  if (name == "generate") return HttpApi::Generate;
  if (name == "openai") return HttpApi::OpenAiCompletions;
  throw Error("moe-bench: --api must be \"generate\" or \"openai\", got \"" + name + "\"");
}

std::string api_path(HttpApi api) { return api == HttpApi::Generate ? "/generate" : "/v1/completions"; }

std::string request_body(HttpApi api, const BenchRequest& request) {
  json body;
  if (api == HttpApi::Generate) {
    body = {{"input_ids", request.input_ids},
            {"sampling_params", {{"max_new_tokens", request.output_len}, {"ignore_eos", true},
                                 {"temperature", request.temperature}}}};
  } else {
    body = {{"prompt", request.input_ids}, {"max_tokens", request.output_len}, {"ignore_eos", true},
            {"temperature", request.temperature}, {"logprobs", 0},          {"stream_options", {{"include_usage", true}}}};
  }
  body["stream"] = true;
  body["return_routed_experts"] = request.return_routed_experts;
  return body.dump();
}

std::string http_error_message(int status, const std::string& body) {
  const json parsed = json::parse(body, nullptr, false);
  const std::string detail = parsed.is_object() && parsed.contains("error") ? error_message(parsed["error"])
                                                                            : body.substr(0, kQuotedBytes);
  return "HTTP " + std::to_string(status) + ": " + detail;
}

StreamUpdate StreamEventReader::read(const std::string& data) {
  StreamUpdate update;
  if (data == "[DONE]") {
    done_ = true;
    return update;
  }
  const json event = json::parse(data, nullptr, false);
  if (event.is_discarded() || !event.is_object()) {
    update.error = "an event that is not a JSON object: " + data.substr(0, kQuotedBytes);
    return update;
  }
  if (event.contains("error")) {
    update.error = error_message(event["error"]);
    return update;
  }
  if (api_ == HttpApi::Generate) {
    static const json::json_pointer total("/meta_info/completion_tokens");
    if (!event.contains(total) || !event[total].is_number_integer()) {
      update.error = "an event without meta_info.completion_tokens: " + data.substr(0, kQuotedBytes);
      return update;
    }
    const int64_t tokens = event[total].get<int64_t>();
    update.new_tokens = static_cast<int>(tokens - tokens_so_far_);
    tokens_so_far_ = tokens;
    return update;
  }
  static const json::json_pointer tokens("/choices/0/logprobs/tokens"), text("/choices/0/text"),
      usage("/usage/completion_tokens");
  int64_t counted = 0;
  if (event.contains(tokens) && event[tokens].is_array())
    counted = static_cast<int64_t>(event[tokens].size());
  else if (event.contains(text) && event[text].is_string() && !event[text].get_ref<const std::string&>().empty())
    counted = 1;
  else if (!event.contains("choices") && !event.contains(usage)) {
    update.error = "a chunk with neither choices nor usage: " + data.substr(0, kQuotedBytes);
    return update;
  }
  // The server's own count, where it sends one, is the total: what the chunks did not show (a
  // token whose text was held back, several tokens in one chunk) arrives now.
  if (event.contains(usage) && event[usage].is_number_integer())
    counted = std::max<int64_t>(0, event[usage].get<int64_t>() - tokens_so_far_);
  tokens_so_far_ += counted;
  update.new_tokens = static_cast<int>(counted);
  return update;
}

}  // namespace moe::bench
