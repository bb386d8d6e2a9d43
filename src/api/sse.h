#pragma once
// Server-sent events as SGLang and OpenAI stream them: `data: {json}\n\n` per event, then
// `data: [DONE]\n\n`; and the one way JSON bodies are written.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace moe::api {

// `value` as compact JSON; invalid UTF-8 (never expected from the detokenizer) becomes U+FFFD
// instead of failing the whole response.
std::string json_text(const nlohmann::json& value);

// One event carrying `payload`.
std::string sse_event(const nlohmann::json& payload);

// The event that ends every stream.
std::string sse_done();

}  // namespace moe::api
