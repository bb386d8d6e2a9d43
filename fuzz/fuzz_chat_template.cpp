// Client conversations through a real chat template (Qwen3's, with its tool calls, thinking and
// loops over the history): the input is a JSON object {"messages", "tools", "kwargs"} as a client
// could shape it, parsed as the server parses client JSON (its nesting bounded: deeper is a
// moe::Error); rendering gives text or a moe::Error (a template failure or raise_exception).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/bounded_json.h"
#include "common/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const moe::tokenizer::ChatTemplate chat_template = moe::tokenizer::ChatTemplate::compile(
      moe::tokenizer::load_tokenizer_config(MOE_TEST_DATA_DIR "/qwen3-tokenizer").chat_template);
  nlohmann::ordered_json input;
  try {
    input = moe::parse_bounded_json<nlohmann::ordered_json>(
        std::string_view(reinterpret_cast<const char*>(data), size), "input");
  } catch (const nlohmann::json::exception&) {
    return 0;
  } catch (const moe::JsonOverLimit&) {
    return 0;
  }
  if (!input.is_object()) return 0;
  moe::tokenizer::ChatTemplateInputs inputs;
  inputs.messages = input.value("messages", nlohmann::ordered_json::array());
  if (input.contains("tools")) inputs.tools = input["tools"];
  if (input.contains("kwargs")) inputs.extra_variables = input["kwargs"];
  inputs.add_generation_prompt = input.value("add_generation_prompt", true);
  inputs.eos_token = "<|im_end|>";
  try {
    chat_template.render(inputs);
  } catch (const moe::Error&) {
  }
  return 0;
}
