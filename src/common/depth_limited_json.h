#pragma once
// JSON a client sent, parsed with its nesting bounded while it is read. nlohmann's parser keeps its
// own stack, but copying a value, dump() and the chat template's converter recurse once per level:
// 20,000 '[' (40 KB) would otherwise exhaust the stack of whichever thread touches the value, and
// 60 MB of them make the parser allocate gigabytes before it finds the text unclosed.
#include <cstddef>
#include <string>
#include <string_view>

#include "common/error.h"

namespace moe {

// The deepest nesting of objects and arrays accepted in client JSON (the top-level value is level 1).
// Chat templates, tool schemas and template kwargs never come near it.
inline constexpr size_t kMaxJsonDepth = 128;

// Thrown when a text nests deeper than kMaxJsonDepth; what() names the path where the parser stopped
// (its first levels) and the limit: "tools[0].function.parameters... nests objects and arrays deeper
// than 128 levels (the most this server accepts)".
class JsonTooDeep : public Error {
 public:
  explicit JsonTooDeep(std::string path);
  // The field's JSON path, empty when the top-level value itself is the deep one.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Json::parse(text) that stops at the first object or array beyond kMaxJsonDepth levels and throws
// JsonTooDeep; nothing deeper is allocated. `field` names the text in the error ("tools"; empty for a
// request body, whose keys then start the path). Otherwise as Json::parse: a malformed text throws
// nlohmann's parse_error, or with `allow_exceptions` false gives a discarded value.
// Json is nlohmann::json or nlohmann::ordered_json.
template <class Json>
Json parse_depth_limited(std::string_view text, std::string_view field, bool allow_exceptions = true);

}  // namespace moe
