#pragma once
// Jinja tests, the names after `is`: `x is defined`, `x is none`, `n is divisibleby 3`, ...
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

// A test: the value on the left of `is` and the arguments after the test name.
using Predicate = bool (*)(const Value& value, const CallArgs& args);

// The test named `name`, or nullptr when this renderer does not implement it.
Predicate find_predicate(std::string_view name);

}  // namespace moe::tokenizer::jinja
