#include "tokenizer/chat_template.h"

#include "common/error.h"
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
  return compiled_.render(variables);
}

}  // namespace moe::tokenizer
