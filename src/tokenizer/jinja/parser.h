#pragma once
// Parses template source into its statement tree.
#include <string_view>

#include "tokenizer/jinja/ast.h"

namespace moe::tokenizer::jinja {

// The statements of a whole template. Throws moe::Error naming the line for a syntax error and for
// any tag, filter or test this renderer does not implement.
Body parse_template(std::string_view source);

}  // namespace moe::tokenizer::jinja
