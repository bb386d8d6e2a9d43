#pragma once
// Renders a model's chat template exactly as Hugging Face transformers' apply_chat_template does
// (same Jinja settings, globals and tojson), through the Jinja subset of src/jinja/.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "jinja/template.h"

namespace moe::tokenizer {

// What apply_chat_template passes to the template. JSON objects must be ordered_json: `tojson`
// writes keys in their original order, as Python dicts keep it (a std::map-backed nlohmann::json
// would sort them).
struct ChatTemplateInputs {
  // The conversation: a JSON array of message objects ({"role": ..., "content": ...}).
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // Tool schemas (a JSON array); absent renders `tools` as None, as transformers does.
  std::optional<nlohmann::ordered_json> tools;
  bool add_generation_prompt = false;
  // transformers' continue_final_message: the text is cut right after the last message's content,
  // so the prompt ends inside that turn (a partial assistant answer the model continues).
  bool continue_final_message = false;
  // Absent leaves `enable_thinking` undefined, as when the kwarg is not passed.
  std::optional<bool> enable_thinking;
  // Special tokens from tokenizer_config.json; absent ones are undefined in the template.
  std::optional<std::string> bos_token, eos_token;
  // Further template variables (kwargs of apply_chat_template), a JSON object.
  nlohmann::ordered_json extra_variables = nlohmann::ordered_json::object();
};

// A compiled chat template: compile once, render per request (render is const and thread-safe).
class ChatTemplate {
 public:
  // Throws moe::Error naming the line for a syntax error or an unsupported tag, filter or test.
  static ChatTemplate compile(const std::string& source);

  // The prompt text. Throws moe::Error for malformed inputs, for a template failure (naming the
  // line), for raise_exception (carrying the template's message unchanged), and for
  // continue_final_message with add_generation_prompt or a last message whose text the rendering
  // does not hold.
  std::string render(const ChatTemplateInputs& inputs) const;

 private:
  explicit ChatTemplate(jinja::Template compiled) : compiled_(std::move(compiled)) {}

  jinja::Template compiled_;
};

}  // namespace moe::tokenizer
