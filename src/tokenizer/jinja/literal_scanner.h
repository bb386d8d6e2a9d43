#pragma once
// Reads the string and number literals of Jinja expressions, as Python would decode them.
#include <cstddef>
#include <string>
#include <string_view>

namespace moe::tokenizer::jinja {

// A literal read from the source: its decoded text and the position just past it.
struct ScannedLiteral {
  std::string value;
  size_t end;
  bool is_float = false;  // numbers only
};

// Reads the quoted string starting at source[pos] and decodes Python's backslash escapes
// (\n, \t, \\, \', \", \xNN, \uNNNN, \UNNNNNNNN, octal, line continuation). Throws RenderFailure for
// an unterminated string or a malformed escape.
ScannedLiteral scan_string_literal(std::string_view source, size_t pos);

// Reads the decimal number starting at source[pos] (a digit): an integer, or a float with a fraction
// and/or exponent. `after_dot` is true when the previous character is '.', where Jinja reads only
// an integer (so `x.0.1` is two subscripts). Underscores between digits are dropped.
ScannedLiteral scan_number_literal(std::string_view source, size_t pos, bool after_dot);

}  // namespace moe::tokenizer::jinja
