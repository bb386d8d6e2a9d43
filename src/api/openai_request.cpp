// OpenAI's /v1/completions and /v1/chat/completions requests, with vLLM's extra sampling fields
// (top_k, min_p, repetition_penalty, ignore_eos, stop_token_ids, skip_special_tokens, min_tokens,
// return_tokens_as_token_ids, chat_template_kwargs, continue_final_message), tools with tool_choice,
// and the routed-experts extras return_routed_experts, routed_experts_dtype, routed_experts_format.
#include <limits>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/generation_call.h"
#include "api/request_fields.h"
#include "common/bounded_json.h"

namespace moe::api {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Fields of OpenAI's API the engine does not implement, accepted at their no-op value only (any
// other field the parsers do not read is refused: FieldReader::reject_unread).
bool is_empty(const json& v) { return v.empty() || v == ""; }
bool is_text_format(const json& v) { return v.is_object() && v.value("type", "") == "text"; }

constexpr IgnoredField kIgnoredInCompletions[] = {{"suffix", is_empty}, {"user", any_value}};
// `tools` is read from the body in the client's key order (chat_tools), not through the reader.
constexpr IgnoredField kIgnoredInChat[] = {{"response_format", is_text_format}, {"user", any_value},
                                           {"parallel_tool_calls", is_true}, {"tools", any_value}};

// `model` must name the served model when given (OpenAI requires it; curl users often leave it out),
// or be SGLang's "default", what SGLang's clients send when they name none; answers name the served model.
std::string checked_model(const FieldReader& root, const std::string& served_model) {
  std::string model = served_model;
  root.read("model", model);
  if (model == "default") return served_model;
  if (model != served_model) {
    throw ApiError::not_found("The model `" + model + "` does not exist; this server serves `" + served_model + "`",
                              "model_not_found");
  }
  return model;
}

std::string checked_routing_format(const FieldReader& root) {
  std::string format = "base64";
  root.read("routed_experts_format", format);
  if (format != "base64" && format != "list") {
    throw ApiError::invalid_field("routed_experts_format", "must be \"base64\" or \"list\", got \"" + format + "\"");
  }
  return format;
}

// What a request asks of logprobs: the chosen tokens' (`wanted`), and this many alternatives.
struct LogprobsAsk {
  bool wanted = false;
  int32_t top = 0;
  std::string field;  // the field that asks for the alternatives
};

// What both endpoints share: model, sampling, stream options, routing; `prompts` are filled in.
GenerationCall read_common(const FieldReader& root, ApiKind api, const std::string& served_model,
                           std::vector<msg::GenerateRequest> prompts, msg::SamplingParams sampling,
                           LogprobsAsk logprobs) {
  GenerationCall call;
  call.api = api;
  call.model = checked_model(root, served_model);
  msg::RequestFieldNames names;
  read_sampling_fields(root, SamplingDialect::OpenAI, sampling, names);
  names.top_logprobs = logprobs.field;
  root.read("stream", call.stream);
  if (const json* options = root.find("stream_options")) {
    FieldReader(*options, "stream_options").read("include_usage", call.include_usage);
  }
  msg::RoutingOptions routing;
  read_routing_fields(root, api, routing);
  call.routing_format = checked_routing_format(root) == "list" ? RoutingFormat::List : RoutingFormat::Base64;
  root.read("return_tokens_as_token_ids", call.tokens_as_ids);
  for (msg::GenerateRequest& request : prompts) {
    request.sampling = sampling;
    request.field_names = names;
    request.stream = call.stream;
    request.return_logprob = logprobs.wanted;
    request.top_logprobs_num = logprobs.top;
    request.routing = routing;
  }
  call.requests = std::move(prompts);
  return call;
}

// `prompt`: a string, a list of strings, a list of token ids, or a list of such lists.
std::vector<msg::GenerateRequest> completion_prompts(const FieldReader& root) {
  const json* prompt = root.find("prompt");
  if (prompt == nullptr) throw ApiError::invalid_field("prompt", "is required");
  std::vector<msg::GenerateRequest> requests;
  if (prompt->is_string()) {
    requests.emplace_back().text = prompt->get<std::string>();
    return requests;
  }
  if (!prompt->is_array() || prompt->empty()) {
    throw ApiError::invalid_field("prompt", "must be a string, a list of strings or a non-empty list of token ids");
  }
  if (prompt->front().is_number()) {
    read_value(*prompt, "prompt", requests.emplace_back().input_ids.emplace());
    return requests;
  }
  for (size_t i = 0; i < prompt->size(); ++i) {
    const json& element = (*prompt)[i];
    msg::GenerateRequest& request = requests.emplace_back();
    if (element.is_array()) {
      read_value(element, element_path("prompt", i), request.input_ids.emplace());
      if (request.input_ids->empty()) throw ApiError::invalid_field(element_path("prompt", i), "must not be empty");
    } else {
      read_value(element, element_path("prompt", i), request.text.emplace());
    }
  }
  return requests;
}

// `logprobs` (an integer) asks for the sampled tokens' logprobs and that many alternatives.
LogprobsAsk completion_logprobs(const FieldReader& root) {
  LogprobsAsk ask{.field = "logprobs"};
  if (!root.read("logprobs", ask.top)) return ask;
  ask.wanted = true;
  return ask;
}

// A message's content: a string, null, or a list of {"type": "text", "text": ...} parts.
std::string message_content(const json& content, const std::string& path) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw ApiError::invalid_field(path, "must be a string or a list of content parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const FieldReader part(content[i], element_path(path, i));
    std::string type;
    part.read("type", type);
    if (type != "text") {
      throw ApiError::invalid_field(part.path_of("type"), "must be \"text\" (the only content part supported), got \"" +
                                                               type + "\"");
    }
    std::string piece;
    if (!part.read("text", piece)) throw ApiError::invalid_field(part.path_of("text"), "is required");
    text += piece;
  }
  return text;
}

// An assistant turn's tool_calls as the template gets them: OpenAI sends each function's arguments
// as JSON text; templates expect the object (as vLLM passes them, following transformers).
ordered_json template_tool_calls(const ordered_json& calls, const std::string& path) {
  if (!calls.is_array()) throw ApiError::invalid_field(path, "must be a list of tool calls");
  ordered_json result = calls;
  for (size_t i = 0; i < result.size(); ++i) {
    const std::string call_path = element_path(path, i);
    ordered_json& call = result[i];
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
      throw ApiError::invalid_field(call_path + ".function", "must be an object with the function's name and arguments");
    ordered_json& arguments = call["function"]["arguments"];
    if (!arguments.is_string()) continue;
    const std::string arguments_path = call_path + ".function.arguments";
    try {
      arguments = parse_bounded_json<ordered_json>(arguments.get<std::string>(), arguments_path, /*allow_exceptions=*/false);
    } catch (const JsonOverLimit& e) {
      throw ApiError(400, e.what(), arguments_path);
    }
    if (arguments.is_discarded()) throw ApiError::invalid_field(arguments_path, "must be the text of a JSON object");
  }
  return result;
}

// A turn's keys besides role and content that chat templates read, in the client's order; the
// text of a JSON object, or empty.
std::string extra_message_fields(const ordered_json& message, const std::string& path) {
  ordered_json extra = ordered_json::object();
  for (const auto& [key, value] : message.items()) {
    if (value.is_null()) continue;
    if (key == "tool_calls") {
      extra[key] = template_tool_calls(value, path + ".tool_calls");
    } else if (key == "reasoning_content" || key == "tool_call_id" || key == "name") {
      if (!value.is_string()) throw ApiError::invalid_field(path + "." + key, "must be a string");
      extra[key] = value;
    }
  }
  return extra.empty() ? std::string() : extra.dump();
}

// `messages` read from the sorted view `root`, their extra fields from `ordered`, the same body in
// the client's key order (templates write tool calls' arguments as given).
std::vector<msg::ChatMessage> chat_messages(const FieldReader& root, const ordered_json& ordered) {
  const json* messages = root.find("messages");
  if (messages == nullptr || !messages->is_array() || messages->empty()) {
    throw ApiError::invalid_field("messages", "must be a non-empty list of messages");
  }
  std::vector<msg::ChatMessage> result;
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string path = element_path("messages", i);
    const FieldReader message((*messages)[i], path);
    msg::ChatMessage& turn = result.emplace_back();
    if (!message.read("role", turn.role) || turn.role.empty()) {
      throw ApiError::invalid_field(message.path_of("role"), "is required");
    }
    if (const json* content = message.find("content")) turn.content = message_content(*content, message.path_of("content"));
    turn.extra_fields = extra_message_fields(ordered["messages"][i], path);
  }
  return result;
}

// OpenAI's `tools`: a list of {"type": "function", "function": {"name": ...}}, kept in the client's
// key order for the template; empty when absent.
std::string chat_tools(const ordered_json& body) {
  const auto tools = body.find("tools");
  if (tools == body.end() || tools->is_null()) return {};
  if (!tools->is_array()) throw ApiError::invalid_field("tools", "must be a list of tools");
  for (size_t i = 0; i < tools->size(); ++i) {
    const std::string path = element_path("tools", i);
    const ordered_json& tool = (*tools)[i];
    if (!tool.is_object() || tool.value("type", "") != "function")
      throw ApiError::invalid_field(path + ".type", "must be \"function\"");
    const auto function = tool.find("function");
    if (function == tool.end() || !function->is_object() || !function->contains("name") ||
        !(*function)["name"].is_string() || (*function)["name"].get<std::string>().empty())
      throw ApiError::invalid_field(path + ".function.name", "is required (a non-empty string)");
  }
  return tools->empty() ? std::string() : tools->dump();
}

// tool_choice, as vLLM takes it: "none" renders the tools but parses no calls; "auto" (the default
// with tools) parses them, which needs --tool-call-parser. Forcing a call ("required" or a named
// function) is refused: the engine cannot constrain the output to a call. Returns whether the
// answer parses tool calls.
bool parses_tool_calls(const FieldReader& root, bool has_tools, const OutputParsers& parsers) {
  const json* given = root.find("tool_choice");
  if (given == nullptr && !has_tools) return false;
  const json choice = given != nullptr ? *given : json("auto");
  if (choice == "none") return false;
  if (choice == "auto") {
    if (!has_tools) throw ApiError::invalid_field("tool_choice", "\"auto\" needs `tools`");
    if (!parsers.qwen25_tool_calls)
      throw ApiError::invalid_field("tool_choice", "\"auto\" (the default with tools) needs a server started with "
                                                   "--tool-call-parser; send \"none\" to only render the tools");
    return true;
  }
  if (choice == "required" || choice.is_object())
    throw ApiError::invalid_field("tool_choice", "forcing a tool call is not supported (only \"auto\" and \"none\"), got " +
                                                     choice.dump());
  throw ApiError::invalid_field("tool_choice", "must be \"none\" or \"auto\", got " + choice.dump());
}

// `logprobs` (a bool) with `top_logprobs`, the alternatives at each token, which needs logprobs.
LogprobsAsk chat_logprobs(const FieldReader& root) {
  LogprobsAsk ask{.field = "top_logprobs"};
  root.read("logprobs", ask.wanted);
  if (root.read("top_logprobs", ask.top) && ask.top > 0 && !ask.wanted)
    throw ApiError::invalid_field("top_logprobs", "needs \"logprobs\": true");
  return ask;
}

// `echo`: the answer repeats each prompt (its text: a prompt of token ids is refused, as there is no
// text to repeat here) and, with `logprobs`, the prompt tokens' logprobs before the output's.
void read_echo(const FieldReader& root, GenerationCall& call) {
  root.read("echo", call.echo);
  if (!call.echo) return;
  for (msg::GenerateRequest& request : call.requests) {
    if (!request.text) throw ApiError::invalid_field("echo", "needs a text prompt (this server does not echo token ids)");
    if (request.return_logprob) request.logprob_start_len = 0;
  }
}

// `chat_template_kwargs`: further variables for the chat template (Qwen3's enable_thinking), an object.
std::string chat_template_kwargs(const FieldReader& root) {
  const json* kwargs = root.find("chat_template_kwargs");
  if (kwargs == nullptr) return {};
  if (!kwargs->is_object()) throw ApiError::invalid_field("chat_template_kwargs", "must be an object");
  return kwargs->dump();
}

}  // namespace

GenerationCall parse_completion(const json& body, const std::string& served_model) {
  const FieldReader root(body, "");
  msg::SamplingParams sampling;
  sampling.max_new_tokens = 16;  // OpenAI's default for completions
  GenerationCall call = read_common(root, ApiKind::Completion, served_model, completion_prompts(root), sampling,
                                    completion_logprobs(root));
  read_echo(root, call);
  const int32_t n = call.requests.front().sampling.n;
  int32_t best_of = n;
  if (root.read("best_of", best_of) && best_of != n) {
    throw ApiError::invalid_field("best_of", "is not supported unless equal to n, got " + std::to_string(best_of));
  }
  root.reject_unread(kIgnoredInCompletions);
  return call;
}

GenerationCall parse_chat_completion(const ordered_json& body, const std::string& served_model,
                                     const OutputParsers& parsers) {
  const json sorted = body;  // what the field readers read; `body` keeps the client's key order
  const FieldReader root(sorted, "");
  msg::GenerateRequest prompt;
  prompt.messages = chat_messages(root, body);
  prompt.chat_template_kwargs = chat_template_kwargs(root);
  prompt.tools = chat_tools(body);
  root.read("continue_final_message", prompt.continue_final_message);
  const bool tool_calls = parses_tool_calls(root, !prompt.tools.empty(), parsers);
  const std::string continued = prompt.continue_final_message ? prompt.messages->back().content : std::string();
  msg::SamplingParams sampling;
  // No limit by default, as OpenAI: the scheduler clamps it to what the context and KV pool hold.
  sampling.max_new_tokens = std::numeric_limits<int32_t>::max();
  GenerationCall call =
      read_common(root, ApiKind::ChatCompletion, served_model, {std::move(prompt)}, sampling, chat_logprobs(root));
  // The newer name wins over the deprecated max_tokens, as in OpenAI's API.
  msg::GenerateRequest& request = call.requests.front();
  if (root.read("max_completion_tokens", request.sampling.max_new_tokens))
    request.field_names.max_new_tokens = "max_completion_tokens";
  call.output_parsing = {.reasoning = parsers.qwen3_reasoning, .tool_calls = tool_calls, .continued_text = continued};
  root.reject_unread(kIgnoredInChat);
  return call;
}

}  // namespace moe::api
