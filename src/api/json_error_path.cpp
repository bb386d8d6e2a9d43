#include "api/json_error_path.h"

#include <vector>

#include <nlohmann/json.hpp>

namespace moe::api {
namespace {

// One open object or array of the parse: the key or index of the value being read in it.
struct OpenContainer {
  bool is_array = false;
  std::string key;
  size_t index = 0;
};

std::string path_of(const std::vector<OpenContainer>& open) {
  std::string path;
  for (const OpenContainer& c : open) {
    if (c.is_array) {
      path += '[';
      path += std::to_string(c.index);
      path += ']';
    } else {
      if (!path.empty()) path += '.';
      path += c.key;
    }
  }
  return path;
}

}  // namespace

std::string json_error_path(std::string_view body) {
  using Event = nlohmann::json::parse_event_t;
  std::vector<OpenContainer> open;
  // The parser reports each event as it reads the body; when it throws, `open` holds the path of
  // the value it was reading. Every value is kept: a discarded container would hide its end event.
  const auto track = [&](int, Event event, nlohmann::json& parsed) {
    const auto value_done = [&] {
      if (!open.empty() && open.back().is_array) ++open.back().index;
    };
    switch (event) {
      case Event::object_start: open.push_back({}); break;
      case Event::array_start: open.push_back({.is_array = true, .key = {}, .index = 0}); break;
      case Event::key: open.back().key = parsed.get<std::string>(); break;
      case Event::object_end:
      case Event::array_end:
        open.pop_back();
        value_done();
        break;
      case Event::value: value_done(); break;
    }
    return true;
  };
  try {
    [[maybe_unused]] const nlohmann::json parsed = nlohmann::json::parse(body, track);
  } catch (const nlohmann::json::exception&) {
    return path_of(open);
  }
  return "";
}

}  // namespace moe::api
