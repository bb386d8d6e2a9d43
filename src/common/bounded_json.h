#pragma once
// JSON a client sent, parsed with its nesting and its number of allocations bounded while it is read.
// nlohmann's parser keeps its own stack, but copying a value, dump() and the chat template's converter
// recurse once per level: 20,000 '[' (40 KB) would otherwise exhaust the stack of whichever thread
// touches the value, and 60 MB of them make the parser allocate gigabytes before it finds the text
// unclosed. Each object, array and string is an allocation of its own: 12 million "[1]" in a 48 MB
// body held the front door for 40 s and left 1.4 GB resident.
#include <cstddef>
#include <string>
#include <string_view>

#include "common/error.h"

namespace moe {

// The deepest nesting of objects and arrays accepted in client JSON (the top-level value is level 1).
// Chat templates, tool schemas and template kwargs never come near it.
inline constexpr size_t kMaxJsonDepth = 128;
// The most objects, arrays and strings (keys among them) one client JSON text may hold; numbers,
// booleans and nulls are not counted. A prompt of a batch with its own sampling parameters and stop
// strings holds a few dozen, so 8192 such prompts fit; OpenAI takes at most 300 logit_bias keys.
inline constexpr size_t kMaxJsonStringsAndContainers = 1u << 18;

// Thrown when a text is beyond one of the bounds; what() names where the parser stopped and the limit.
class JsonOverLimit : public Error {
 public:
  JsonOverLimit(const std::string& message, std::string path) : Error(message), path_(std::move(path)) {}
  // The JSON path where the parser stopped (its first levels), empty at the top level.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Nesting beyond kMaxJsonDepth: "tools[0].function.parameters... nests objects and arrays deeper than
// 128 levels (the most this server accepts)".
class JsonTooDeep : public JsonOverLimit {
 public:
  explicit JsonTooDeep(const std::string& path);
};

// More than kMaxJsonStringsAndContainers objects, arrays and strings: "input_ids[262141] is past
// 262144 objects, arrays and strings (the most this server accepts in one JSON text)".
class JsonTooLarge : public JsonOverLimit {
 public:
  explicit JsonTooLarge(const std::string& path);
};

// Json::parse(text) that stops at the first object or array beyond kMaxJsonDepth levels, or the
// first object, array or string past kMaxJsonStringsAndContainers, throwing JsonTooDeep or
// JsonTooLarge; nothing past the bound is allocated. `field` names the text in the error ("tools";
// empty for a request body, whose keys then start the path). Otherwise as Json::parse: a malformed
// text throws nlohmann's parse_error, or with `allow_exceptions` false gives a discarded value.
// Json is nlohmann::json or nlohmann::ordered_json.
template <class Json>
Json parse_bounded_json(std::string_view text, std::string_view field, bool allow_exceptions = true);

}  // namespace moe
