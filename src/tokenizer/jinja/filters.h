#pragma once
// Jinja filters, the names after `|`: `messages | length`, `tool | tojson(indent=4)`, ...
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

// A filter: the value on the left of `|` and the arguments after the filter name.
using Filter = Value (*)(const Value& input, const CallArgs& args);

// The filter named `name`, or nullptr when this renderer does not implement it.
Filter find_filter(std::string_view name);

}  // namespace moe::tokenizer::jinja
