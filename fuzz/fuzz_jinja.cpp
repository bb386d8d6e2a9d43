// Template source (a model's chat template) compiled and rendered over a conversation: compile and
// render give text or a moe::Error naming the line, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "jinja/template.h"

namespace {

moe::jinja::Dict conversation() {
  using moe::jinja::Value;
  auto message = [](const char* role, const char* content) {
    moe::jinja::Dict m;
    m.set("role", Value::string(role));
    m.set("content", Value::string(content));
    return Value::dict(std::move(m));
  };
  moe::jinja::Dict variables;
  variables.set("messages", Value::list({message("system", "Be brief."), message("user", "Hi <think>"),
                                         message("assistant", "Hello!\n\nHow can I help?")}));
  variables.set("add_generation_prompt", Value::boolean(true));
  variables.set("bos_token", Value::string("<s>"));
  variables.set("n", Value::integer(3));
  variables.set("x", Value::number(2.5));
  variables.set("tools", Value::none());
  return variables;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const moe::jinja::Dict variables = conversation();
  try {
    moe::jinja::Template::compile(std::string_view(reinterpret_cast<const char*>(data), size)).render(variables);
  } catch (const moe::Error&) {
  }
  return 0;
}
