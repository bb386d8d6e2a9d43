#pragma once
// Python methods templates call on values: str methods (`content.strip()`, `text.split('x')`)
// and dict methods (`message.items()`, `tool.get('name')`).
#include <optional>
#include <string>

#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

// `receiver.name` as a bound method when the receiver's Python type has a method of that name;
// nullopt when Python has no such attribute (so a dict item may be looked up instead). Throws
// RenderFailure for a real Python method this renderer does not implement.
std::optional<Value> find_method(const Value& receiver, const std::string& name);

}  // namespace moe::tokenizer::jinja
