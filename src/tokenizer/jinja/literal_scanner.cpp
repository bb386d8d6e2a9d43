#include "tokenizer/jinja/literal_scanner.h"

#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads exactly `count` hex digits at source[pos] as a code point.
char32_t read_hex(std::string_view source, size_t pos, int count) {
  char32_t value = 0;
  for (int i = 0; i < count; ++i) {
    const int digit = pos + i < source.size() ? hex_value(source[pos + i]) : -1;
    if (digit < 0) throw RenderFailure("truncated \\x, \\u or \\U escape in a string literal");
    value = value * 16 + static_cast<char32_t>(digit);
  }
  if (value > 0x10FFFF) throw RenderFailure("\\U escape out of range in a string literal");
  return value;
}

// Digits with single underscores between them ((\d+_)*\d+), appended without underscores;
// returns the position after them, or `pos` when there is no digit there.
size_t read_digits(std::string_view source, size_t pos, std::string& out) {
  size_t end = pos;
  while (end < source.size() && is_digit(source[end])) {
    out += source[end++];
    if (end + 1 < source.size() && source[end] == '_' && is_digit(source[end + 1])) ++end;
  }
  return end;
}

}  // namespace

ScannedLiteral scan_string_literal(std::string_view source, size_t pos) {
  const char quote = source[pos];
  std::u32string decoded;
  size_t i = pos + 1;
  const auto append_text = [&](size_t from, size_t to) {
    const std::u32string points = python_text::decode(source.substr(from, to - from));
    decoded += points;
  };
  while (true) {
    const size_t stop = source.find_first_of(std::string{quote, '\\'}, i);
    if (stop == std::string_view::npos) throw RenderFailure("unterminated string literal");
    append_text(i, stop);
    if (source[stop] == quote) return {python_text::encode(decoded), stop + 1};
    if (stop + 1 >= source.size()) throw RenderFailure("unterminated string literal");
    const char escape = source[stop + 1];
    i = stop + 2;
    switch (escape) {
      case '\n':
        break;  // a backslash before a newline continues the line
      case '\\':
      case '\'':
      case '"':
        decoded += static_cast<char32_t>(escape);
        break;
      case 'a':
        decoded += U'\a';
        break;
      case 'b':
        decoded += U'\b';
        break;
      case 'f':
        decoded += U'\f';
        break;
      case 'n':
        decoded += U'\n';
        break;
      case 'r':
        decoded += U'\r';
        break;
      case 't':
        decoded += U'\t';
        break;
      case 'v':
        decoded += U'\v';
        break;
      case 'x':
        decoded += read_hex(source, i, 2);
        i += 2;
        break;
      case 'u':
        decoded += read_hex(source, i, 4);
        i += 4;
        break;
      case 'U':
        decoded += read_hex(source, i, 8);
        i += 8;
        break;
      case 'N':
        throw RenderFailure("\\N{...} escapes are not supported in string literals");
      default:
        if (escape >= '0' && escape <= '7') {
          // Up to three octal digits.
          char32_t value = static_cast<char32_t>(escape - '0');
          for (int n = 0; n < 2 && i < source.size() && source[i] >= '0' && source[i] <= '7'; ++n)
            value = value * 8 + static_cast<char32_t>(source[i++] - '0');
          decoded += value;
        } else {
          // Python keeps unknown escapes as written.
          decoded += U'\\';
          i = stop + 1;
        }
    }
  }
}

ScannedLiteral scan_number_literal(std::string_view source, size_t pos, bool after_dot) {
  ScannedLiteral literal;
  literal.end = read_digits(source, pos, literal.value);
  if (after_dot) return literal;
  std::string fraction;
  if (literal.end + 1 < source.size() && source[literal.end] == '.' && is_digit(source[literal.end + 1])) {
    fraction = ".";
    literal.end = read_digits(source, literal.end + 1, fraction);
  }
  std::string exponent;
  if (literal.end < source.size() && (source[literal.end] == 'e' || source[literal.end] == 'E')) {
    size_t at = literal.end + 1;
    exponent = "e";
    if (at < source.size() && (source[at] == '+' || source[at] == '-')) exponent += source[at++];
    const size_t end = read_digits(source, at, exponent);
    if (end == at)
      exponent.clear();  // not an exponent: `1e` is 1 followed by the name e
    else
      literal.end = end;
  }
  literal.is_float = !fraction.empty() || !exponent.empty();
  literal.value += fraction + exponent;
  return literal;
}

}  // namespace moe::tokenizer::jinja
