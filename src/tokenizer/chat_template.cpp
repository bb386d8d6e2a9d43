#include "tokenizer/chat_template.h"

#include "common/error.h"
#include "jinja/python_text.h"
#include "jinja/value.h"

namespace moe::tokenizer {

namespace {

// Converts request JSON to a template value, reporting bad input as a moe::Error naming `what`.
jinja::Value input_value(const nlohmann::ordered_json& json, const std::string& what) {
  try {
    return jinja::value_from_json(json);
  } catch (const jinja::RenderFailure& failure) {
    throw Error("chat template input '" + what + "': " + failure.what());
  }
}

// transformers' continue_final_message: cuts `rendered` after the last occurrence of the final
// message's content, found stripped (a template may trim it) and kept whole when the rendering
// holds it as given (transformers compares the text from there with the unstripped message).
std::string cut_after_final_message(std::string rendered, const nlohmann::ordered_json& messages) {
  const nlohmann::ordered_json* content = nullptr;
  if (!messages.empty() && messages.back().is_object() && messages.back().contains("content"))
    content = &messages.back()["content"];
  if (content == nullptr || !content->is_string())
    throw Error("continue_final_message: the last message has no text content to continue");
  const std::string& text = content->get_ref<const std::string&>();
  const std::string stripped = jinja::python_text::strip(text, std::nullopt, true, true);
  const size_t at = rendered.rfind(stripped);
  if (at == std::string::npos)
    throw Error("continue_final_message: the chat template's output does not hold the last message's text");
  const bool as_given = rendered.compare(at, text.size(), text) == 0;
  rendered.resize(at + (as_given ? text.size() : stripped.size()));
  return rendered;
}

}  // namespace

ChatTemplate ChatTemplate::compile(const std::string& source) { return ChatTemplate(jinja::Template::compile(source)); }

std::string ChatTemplate::render(const ChatTemplateInputs& inputs) const {
  if (!inputs.messages.is_array()) throw Error("chat template input 'messages' must be a JSON array");
  if (inputs.tools && !inputs.tools->is_array()) throw Error("chat template input 'tools' must be a JSON array");
  if (!inputs.extra_variables.is_object()) throw Error("chat template extra variables must be a JSON object");
  // The variables of transformers' render call: messages, tools, documents, add_generation_prompt,
  // then the special tokens and the caller's kwargs.
  jinja::Dict variables;
  variables.set("messages", input_value(inputs.messages, "messages"));
  variables.set("tools", inputs.tools ? input_value(*inputs.tools, "tools") : jinja::Value::none());
  variables.set("documents", jinja::Value::none());
  variables.set("add_generation_prompt", jinja::Value::boolean(inputs.add_generation_prompt));
  if (inputs.bos_token) variables.set("bos_token", jinja::Value::string(*inputs.bos_token));
  if (inputs.eos_token) variables.set("eos_token", jinja::Value::string(*inputs.eos_token));
  if (inputs.enable_thinking) variables.set("enable_thinking", jinja::Value::boolean(*inputs.enable_thinking));
  for (const auto& [name, value] : inputs.extra_variables.items()) {
    if (name == "messages" || name == "tools" || name == "documents" || name == "add_generation_prompt")
      throw Error("chat template extra variable '" + name + "' clashes with a fixed input");
    variables.set(name, input_value(value, name));
  }
  if (!inputs.continue_final_message) return compiled_.render(variables);
  if (inputs.add_generation_prompt)
    throw Error("continue_final_message and add_generation_prompt cannot both be set");
  return cut_after_final_message(compiled_.render(variables), inputs.messages);
}

}  // namespace moe::tokenizer
