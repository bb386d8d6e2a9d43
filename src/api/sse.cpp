#include "api/sse.h"

#include <nlohmann/json.hpp>

namespace moe::api {

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string sse_event(const nlohmann::json& payload) { return "data: " + json_text(payload) + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace moe::api
