#pragma once
// Text forms of template values exactly as Python writes them: str() for `{{ x }}`, `~` and the
// `string` filter, repr() for the items of a printed list or dict.
#include <string>

#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

// str(value); Undefined prints as "". Throws RenderFailure for callables, whose Python text is an
// object address no renderer could reproduce.
std::string to_str(const Value& value);
// repr(value).
std::string to_repr(const Value& value);
// repr(float): the shortest text that round-trips, "1.0", "1e+16", "1.5e-05", "nan", "inf".
std::string format_float(double value);

}  // namespace moe::tokenizer::jinja
