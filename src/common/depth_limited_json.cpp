#include "common/depth_limited_json.h"

#include <nlohmann/json.hpp>

#include "common/json_parse_path.h"

namespace moe {
namespace {

// How many levels of the path a JsonTooDeep names, and how much of each key: enough to find the
// field, short enough to read.
constexpr size_t kLevelsNamed = 4;
constexpr size_t kKeyBytesNamed = 64;

std::string too_deep_message(const std::string& path) {
  return (path.empty() ? std::string("the JSON") : path) + " nests objects and arrays deeper than " +
         std::to_string(kMaxJsonDepth) + " levels (the most this server accepts)";
}

}  // namespace

JsonTooDeep::JsonTooDeep(std::string path) : Error(too_deep_message(path)), path_(std::move(path)) {}

template <class Json>
Json parse_depth_limited(std::string_view text, std::string_view field, bool allow_exceptions) {
  using Event = typename Json::parse_event_t;
  JsonParsePath path;
  // Called as each event is read, before the parser allocates the container it opens.
  const auto bound = [&](int, Event event, Json& parsed) {
    if ((event == Event::object_start || event == Event::array_start) && path.depth() >= kMaxJsonDepth)
      throw JsonTooDeep(path.str(field, kLevelsNamed, kKeyBytesNamed));
    path.follow(event, parsed);
    return true;
  };
  return Json::parse(text, bound, allow_exceptions);
}

template nlohmann::json parse_depth_limited<nlohmann::json>(std::string_view, std::string_view, bool);
template nlohmann::ordered_json parse_depth_limited<nlohmann::ordered_json>(std::string_view, std::string_view, bool);

}  // namespace moe
