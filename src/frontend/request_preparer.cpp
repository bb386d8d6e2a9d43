#include "frontend/request_preparer.h"

#include "common/bounded_json.h"
#include "common/error.h"
#include "frontend/request_ids.h"

namespace moe {
namespace {

// JSON text a request carries for the template (chat_template_kwargs, tools, a message's extra
// fields), parsed in its key order with its depth bounded; `what` names it when it is too deep or not
// JSON of the type `is_type` checks.
nlohmann::ordered_json template_json(const std::string& text, const std::string& what,
                                     bool (nlohmann::ordered_json::*is_type)() const noexcept, const char* type) {
  nlohmann::ordered_json value = parse_bounded_json<nlohmann::ordered_json>(text, what, /*allow_exceptions=*/false);
  if (!(value.*is_type)()) throw Error(what + " must be the text of a JSON " + type);
  return value;
}

nlohmann::ordered_json template_kwargs(const std::string& text) {
  if (text.empty()) return nlohmann::ordered_json::object();
  return template_json(text, "chat_template_kwargs", &nlohmann::ordered_json::is_object, "object");
}

// The messages as the template sees them: role, content, then each turn's extra fields.
nlohmann::ordered_json template_messages(const std::vector<msg::ChatMessage>& messages) {
  nlohmann::ordered_json result = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const msg::ChatMessage& m = messages[i];
    nlohmann::ordered_json turn = {{"role", m.role}, {"content", m.content}};
    if (!m.extra_fields.empty()) {
      const std::string what = "messages[" + std::to_string(i) + "].extra_fields";
      const nlohmann::ordered_json extra = template_json(m.extra_fields, what, &nlohmann::ordered_json::is_object, "object");
      for (const auto& [key, value] : extra.items()) {
        if (key == "role" || key == "content") throw Error(what + " must not hold '" + key + "'");
        turn[key] = value;
      }
    }
    result.push_back(std::move(turn));
  }
  return result;
}

}  // namespace

RequestPreparer::RequestPreparer(tokenizer::Tokenizer tokenizer, const PromptFormat& format,
                                 const RequestLimits& limits)
    : tokenizer_(std::move(tokenizer)), bos_token_(format.bos_token), eos_token_(format.eos_token), limits_(limits) {
  if (!format.chat_template.empty()) chat_template_ = tokenizer::ChatTemplate::compile(format.chat_template);
}

std::vector<int32_t> RequestPreparer::prompt_ids(const msg::GenerateRequest& request) const {
  const int given = request.text.has_value() + request.input_ids.has_value() + request.messages.has_value();
  if (given != 1) throw Error("give exactly one of text, input_ids and messages");
  if (request.input_ids) {
    check_token_ids(*request.input_ids, "input_ids");
    return *request.input_ids;
  }
  if (request.text) return tokenize(*request.text, "text");
  require_tokenizer("messages");
  if (!chat_template_) throw Error("messages: this model's tokenizer has no chat template");
  check_chat_bytes(request);
  tokenizer::ChatTemplateInputs inputs;
  inputs.messages = template_messages(*request.messages);
  if (!request.tools.empty()) inputs.tools = template_json(request.tools, "tools", &nlohmann::ordered_json::is_array, "array");
  if (request.continue_final_message && (request.messages->empty() || request.messages->back().role != "assistant"))
    throw Error("continue_final_message needs the last message to be the assistant's");
  inputs.add_generation_prompt = !request.continue_final_message;
  inputs.continue_final_message = request.continue_final_message;
  inputs.bos_token = bos_token_;
  inputs.eos_token = eos_token_;
  inputs.extra_variables = template_kwargs(request.chat_template_kwargs);
  return tokenize(chat_template_->render(inputs), "the chat template's output");
}

void RequestPreparer::check_prompt_bytes(size_t bytes, const std::string& field) const {
  const size_t limit = max_prompt_bytes();
  if (bytes > limit)
    throw Error(field + " is " + std::to_string(bytes) + " bytes; a prompt this server can take (" +
                std::to_string(limits_.max_sequence_len) + " tokens) is at most " + std::to_string(limit) + " bytes");
}

void RequestPreparer::check_chat_bytes(const msg::GenerateRequest& request) const {
  size_t bytes = request.tools.size() + request.chat_template_kwargs.size();
  for (const msg::ChatMessage& m : *request.messages) bytes += m.role.size() + m.content.size() + m.extra_fields.size();
  check_prompt_bytes(bytes, "the chat (messages, tools and chat_template_kwargs)");
}

std::vector<int32_t> RequestPreparer::tokenize(const std::string& text, const std::string& field) const {
  require_tokenizer(field);
  check_prompt_bytes(text.size(), field);
  return tokenizer_.encode(text);
}

void RequestPreparer::require_tokenizer(const std::string& field) const {
  if (limits_.skip_tokenizer)
    throw FieldError(field, field + ": this server runs with --skip-tokenizer-init (no tokenizer): give the prompt as input_ids");
}

void RequestPreparer::check_token_ids(const std::vector<int32_t>& ids, const std::string& field) const {
  for (int32_t id : ids)
    if (id < 0 || id >= limits_.vocab_size)
      throw Error(field + ": token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(limits_.vocab_size) + ")");
}

std::string RequestPreparer::detokenize(const std::vector<int32_t>& ids, const std::string& field) const {
  require_tokenizer(field);
  check_token_ids(ids, field);
  return tokenizer_.decode(ids);
}

msg::ErrorReply refusal_reply(const std::string& rid, const Error& error, const std::string& source) {
  const auto* field = dynamic_cast<const FieldError*>(&error);
  return {rid, error.what(), 400, source, field ? field->field() : std::string()};
}

void RequestPreparer::check_length(const msg::TokenizedRequest& request, const msg::RequestFieldNames& names) const {
  const auto prompt = static_cast<int64_t>(request.input_ids.size());
  if (prompt == 0) throw Error("the prompt is empty");
  if (limits_.context_length > 0 && prompt >= limits_.context_length)
    throw Error("the prompt has " + std::to_string(prompt) + " tokens; the model's context is " +
                std::to_string(limits_.context_length));
  if (prompt > limits_.max_sequence_len)
    throw Error("the prompt has " + std::to_string(prompt) + " tokens, more than the " +
                std::to_string(limits_.max_sequence_len) + " the context length and KV cache allow");
  // A limit the client gave must fit beside the prompt (vLLM's rule); the endpoints' defaults are
  // clamped by the scheduler instead.
  const int64_t room = limits_.max_sequence_len - prompt;
  const std::string& max_new_tokens_field = names.max_new_tokens;
  if (!max_new_tokens_field.empty() && request.sampling.max_new_tokens > room)
    throw FieldError::about(max_new_tokens_field,
                            "is " + std::to_string(request.sampling.max_new_tokens) + ", but the prompt has " +
                                std::to_string(prompt) + " tokens and the context holds " +
                                std::to_string(limits_.max_sequence_len) + " (max_model_len): at most " +
                                std::to_string(room) + " can be generated");
  // The last output token is fed (and needs a position) only when the reply carries its routing.
  if (request.routing.routes_last_token() && prompt >= limits_.max_sequence_len)
    throw Error("the prompt fills the context and KV cache, leaving no room for the last token's routing");
}

msg::TokenizedRequest RequestPreparer::prepare(const msg::GenerateRequest& request) {
  check_request_values(request, limits_);

  msg::TokenizedRequest out;
  static_cast<msg::RequestOptions&>(out) = request;
  if (!out.routing.layers) out.routing.layers = limits_.routed_experts_layers;
  out.input_ids = prompt_ids(request);
  check_length(out, request.field_names);
  // SGLang refuses a start at or past the prompt's end the same way.
  if (out.return_logprob && out.logprob_start_len >= static_cast<int64_t>(out.input_ids.size()))
    throw FieldError::about(request.field_names.logprob_start_len,
                            "is " + std::to_string(out.logprob_start_len) + ", but the prompt has " +
                                std::to_string(out.input_ids.size()) + " tokens: it must be below that");
  out.rid = request.rid.empty() ? new_request_id() : request.rid;
  return out;
}

}  // namespace moe
