#include "api/json_error_path.h"

#include <nlohmann/json.hpp>

#include "common/json_parse_path.h"

namespace moe::api {

std::string json_error_path(std::string_view body) {
  using Event = nlohmann::json::parse_event_t;
  JsonParsePath path;
  // The parser reports each event as it reads the body; when it throws, `path` is that of the value
  // it was reading. Every value is kept: a discarded container would hide its end event.
  const auto track = [&](int, Event event, nlohmann::json& parsed) {
    path.follow(event, parsed);
    return true;
  };
  try {
    [[maybe_unused]] const nlohmann::json parsed = nlohmann::json::parse(body, track);
  } catch (const nlohmann::json::exception&) {
    return path.str();
  }
  return "";
}

}  // namespace moe::api
