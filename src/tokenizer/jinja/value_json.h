#pragma once
// Conversion between JSON documents and template values: request data (messages, tools) becomes
// values, and the `tojson` filter writes values the way transformers' tojson (json.dumps) does.
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

// Options of Python's json.dumps that transformers' tojson filter exposes.
struct JsonDumpOptions {
  // The indent unit; absent writes everything on one line.
  std::optional<std::string> indent;
  // Item and key separators; absent means json.dumps' defaults for the indent mode.
  std::optional<std::string> item_separator, key_separator;
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// The value of a JSON document; objects keep their key order (hence ordered_json).
Value value_from_json(const nlohmann::ordered_json& json);

// json.dumps(value, ...). Throws RenderFailure for values JSON cannot hold (Undefined, callables,
// namespaces), as json.dumps raises TypeError.
std::string dump_json(const Value& value, const JsonDumpOptions& options);

}  // namespace moe::tokenizer::jinja
