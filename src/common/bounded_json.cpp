#include "common/bounded_json.h"

#include <nlohmann/json.hpp>

#include "common/json_parse_path.h"

namespace moe {
namespace {

// How many levels of the path an error names, and how much of each key: enough to find the field,
// short enough to read.
constexpr size_t kLevelsNamed = 4;
constexpr size_t kKeyBytesNamed = 64;

std::string where(const std::string& path) { return path.empty() ? std::string("the JSON") : path; }

}  // namespace

JsonTooDeep::JsonTooDeep(const std::string& path)
    : JsonOverLimit(where(path) + " nests objects and arrays deeper than " + std::to_string(kMaxJsonDepth) +
                        " levels (the most this server accepts)",
                    path) {}

JsonTooLarge::JsonTooLarge(const std::string& path)
    : JsonOverLimit(where(path) + " is past " + std::to_string(kMaxJsonStringsAndContainers) +
                        " objects, arrays and strings (the most this server accepts in one JSON text)",
                    path) {}

template <class Json>
Json parse_bounded_json(std::string_view text, std::string_view field, bool allow_exceptions) {
  using Event = typename Json::parse_event_t;
  JsonParsePath path;
  size_t allocated = 0;  // objects, arrays and strings so far
  // Called as each event is read: a container before the parser allocates it, a key or string value
  // just after (its text is the parser's token buffer until then).
  const auto bound = [&](int, Event event, Json& parsed) {
    const bool opens = event == Event::object_start || event == Event::array_start;
    if (opens || event == Event::key || (event == Event::value && parsed.is_string())) {
      if (++allocated > kMaxJsonStringsAndContainers) throw JsonTooLarge(path.str(field, kLevelsNamed, kKeyBytesNamed));
      if (opens && path.depth() >= kMaxJsonDepth) throw JsonTooDeep(path.str(field, kLevelsNamed, kKeyBytesNamed));
    }
    path.follow(event, parsed);
    return true;
  };
  return Json::parse(text, bound, allow_exceptions);
}

template nlohmann::json parse_bounded_json<nlohmann::json>(std::string_view, std::string_view, bool);
template nlohmann::ordered_json parse_bounded_json<nlohmann::ordered_json>(std::string_view, std::string_view, bool);

}  // namespace moe
