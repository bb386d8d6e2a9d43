// OpenAI's /v1/completions and /v1/chat/completions bodies: each body is read by both parsers (chat
// in the body's key order, with both output parsers on, as a server with --tool-call-parser and
// --reasoning-parser reads it), and either gives a GenerationCall or an ApiError (a 4xx); any other
// exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/generation_call.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  nlohmann::json parsed;
  try {
    parsed = moe::api::parse_json_body(body);
  } catch (const moe::api::ApiError&) {
    return 0;
  }
  const std::string served_model = "qwen3-moe-tiny";
  try {
    moe::api::parse_completion(parsed, served_model);
  } catch (const moe::api::ApiError&) {
  }
  try {
    moe::api::parse_chat_completion(moe::api::parse_ordered_json_body(body), served_model,
                                    {.qwen25_tool_calls = true, .qwen3_reasoning = true});
  } catch (const moe::api::ApiError&) {
  }
  return 0;
}
