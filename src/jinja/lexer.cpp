#include "jinja/lexer.h"

#include <algorithm>
#include <array>

#include "common/utf8.h"
#include "jinja/python_text.h"
#include "jinja/template.h"
#include "jinja/value.h"

namespace moe::jinja {

namespace {

// A literal read from the source: its decoded text and the position just past it.
struct ScannedLiteral {
  std::string value;
  size_t end;
  bool is_float = false;  // numbers only
};

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

// Reads the quoted string starting at source[pos] and decodes Python's backslash escapes
// (\n, \t, \\, \', \", \xNN, \uNNNN, \UNNNNNNNN, octal, line continuation). Throws RenderFailure for
// an unterminated string or a malformed escape.
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

// Reads the decimal number starting at source[pos] (a digit): an integer, or a float with a fraction
// and/or exponent. `after_dot` is true when the previous character is '.', where Jinja reads only
// an integer (so `x.0.1` is two subscripts). Underscores between digits are dropped.
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

// Jinja joins the source's lines with "\n" (so \r\n and \r become \n) and, without
// keep_trailing_newline, drops one final newline.
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

// Length of the Python whitespace code point at text[pos], or 0.
size_t space_length(std::string_view text, size_t pos) {
  const unsigned char lead = static_cast<unsigned char>(text[pos]);
  const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  if (pos + length > text.size()) return 0;
  const std::u32string point = python_text::decode(text.substr(pos, length));
  return python_text::is_space(point[0]) ? length : 0;
}

// Which delimiter opened a tag.
enum class TagKind { Variable, Block, Comment };

class Lexer {
 public:
  explicit Lexer(std::string source) : source_(std::move(source)) {}

  std::vector<Token> run() {
    while (pos_ < source_.size()) lex_text_and_tag();
    tokens_.push_back({TokenType::End, "", line_});
    return std::move(tokens_);
  }

 private:
  // Reads literal text up to the next tag opener, applies whitespace control to it, then the tag.
  void lex_text_and_tag() {
    size_t open = source_.find('{', pos_);
    while (open != std::string::npos && open + 1 < source_.size() && std::string_view("{%#").find(source_[open + 1]) == std::string_view::npos)
      open = source_.find('{', open + 1);
    if (open == std::string::npos || open + 1 >= source_.size()) {
      emit_text(source_.substr(pos_));
      advance_to(source_.size());
      return;
    }
    const TagKind kind = source_[open + 1] == '{' ? TagKind::Variable : source_[open + 1] == '%' ? TagKind::Block : TagKind::Comment;
    const char modifier = open + 2 < source_.size() ? source_[open + 2] : '\0';
    std::string text = source_.substr(pos_, open - pos_);
    if (modifier == '-') {
      text = python_text::strip(text, std::nullopt, false, true);
    } else if (modifier != '+' && kind != TagKind::Variable) {
      lstrip_block_indent(text);
    }
    emit_text(std::move(text));
    const size_t body = open + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
    advance_to(open);
    const int tag_line = line_;
    advance_to(body);
    if (kind == TagKind::Comment) {
      lex_comment(tag_line);
    } else {
      tokens_.push_back({kind == TagKind::Block ? TokenType::BlockBegin : TokenType::VariableBegin, "", tag_line});
      lex_expression(kind, tag_line);
    }
  }

  // lstrip_blocks: spaces and tabs between the start of a line and a block or comment tag go.
  void lstrip_block_indent(std::string& text) const {
    const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if (line_start == 0 && !line_starting_) return;
    if (line_start == text.size()) return;
    for (size_t i = line_start; i < text.size();) {
      const size_t n = space_length(text, i);
      if (n == 0) return;
      i += n;
    }
    text.resize(line_start);
  }

  void lex_comment(int tag_line) {
    const size_t close = source_.find("#}", pos_);
    if (close == std::string::npos) fail_at(tag_line, "unterminated comment");
    const bool strip_after = close > pos_ && source_[close - 1] == '-';
    const bool keep_newline = close > pos_ && source_[close - 1] == '+';
    advance_to(close + 2);
    finish_tag(strip_after, !keep_newline);
  }

  // After a tag: `-` strips all following whitespace; otherwise trim_blocks drops one newline.
  void finish_tag(bool strip_after, bool trim_newline) {
    size_t end = pos_;
    if (strip_after) {
      while (end < source_.size()) {
        const size_t n = space_length(source_, end);
        if (n == 0) break;
        end += n;
      }
    } else if (trim_newline && end < source_.size() && source_[end] == '\n') {
      ++end;
    }
    advance_to(end);
    line_starting_ = pos_ > 0 && source_[pos_ - 1] == '\n';
  }

  // Reads expression tokens up to the tag's end delimiter; delimiters only count outside brackets.
  void lex_expression(TagKind kind, int tag_line) {
    const std::string close = kind == TagKind::Block ? "%}" : "}}";
    std::vector<char> brackets;
    while (true) {
      skip_whitespace();
      if (pos_ >= source_.size()) fail_at(tag_line, "unexpected end of template, expected '" + close + "'");
      if (brackets.empty()) {
        const std::string_view rest = std::string_view(source_).substr(pos_);
        const bool strip = rest.starts_with("-" + close);
        const bool keep = kind == TagKind::Block && rest.starts_with("+" + close);
        if (strip || keep || rest.starts_with(close)) {
          tokens_.push_back({kind == TagKind::Block ? TokenType::BlockEnd : TokenType::VariableEnd, "", line_});
          advance_to(pos_ + close.size() + ((strip || keep) ? 1 : 0));
          finish_tag(strip, kind == TagKind::Block && !keep);
          return;
        }
      }
      lex_expression_token(brackets);
    }
  }

  void lex_expression_token(std::vector<char>& brackets) {
    const char c = source_[pos_];
    const int token_line = line_;
    try {
      if (is_name_start(c)) {
        size_t end = pos_;
        while (end < source_.size() && is_name_char(source_[end])) ++end;
        push(TokenType::Name, source_.substr(pos_, end - pos_), end);
      } else if (c == '\'' || c == '"') {
        ScannedLiteral literal = scan_string_literal(source_, pos_);
        push(TokenType::String, std::move(literal.value), literal.end);
      } else if (c >= '0' && c <= '9') {
        ScannedLiteral literal = scan_number_literal(source_, pos_, pos_ > 0 && source_[pos_ - 1] == '.');
        push(literal.is_float ? TokenType::Float : TokenType::Integer, std::move(literal.value), literal.end);
      } else {
        lex_operator(brackets);
      }
    } catch (const RenderFailure& failure) {
      fail_at(token_line, failure.what());
    }
  }

  void lex_operator(std::vector<char>& brackets) {
    static constexpr std::array<std::string_view, 6> kTwoChar = {"//", "**", "==", "!=", ">=", "<="};
    const std::string_view rest = std::string_view(source_).substr(pos_);
    for (std::string_view op : kTwoChar)
      if (rest.starts_with(op)) return push(TokenType::Operator, std::string(op), pos_ + 2);
    const char c = source_[pos_];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos)
      throw RenderFailure(std::string("unexpected character '") + c + "' in an expression");
    if (c == '(' || c == '[' || c == '{') brackets.push_back(c);
    if (c == ')' || c == ']' || c == '}') {
      const char expected = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (brackets.empty() || brackets.back() != expected) throw RenderFailure(std::string("unexpected '") + c + "'");
      brackets.pop_back();
    }
    push(TokenType::Operator, std::string(1, c), pos_ + 1);
  }

  void skip_whitespace() {
    size_t end = pos_;
    while (end < source_.size()) {
      const size_t n = space_length(source_, end);
      if (n == 0) break;
      end += n;
    }
    advance_to(end);
  }

  void push(TokenType type, std::string value, size_t end) {
    tokens_.push_back({type, std::move(value), line_});
    advance_to(end);
  }

  void emit_text(std::string text) {
    if (!text.empty()) tokens_.push_back({TokenType::Text, std::move(text), line_});
  }

  // Moves to `end`, counting the newlines passed over.
  void advance_to(size_t end) {
    line_ += static_cast<int>(std::count(source_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         source_.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
    pos_ = end;
  }

  const std::string source_;
  size_t pos_ = 0;
  int line_ = 1;
  // True when the next text starts a line (template start, or the last tag ended with a newline).
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  if (!is_valid_utf8(source)) fail_at(1, "the template is not valid UTF-8");
  return Lexer(normalize_newlines(source)).run();
}

const Token& TokenStream::next() {
  const Token& token = tokens_[pos_];
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return token;
}

bool TokenStream::at(TokenType type, std::string_view value) const {
  return current().type == type && (value.empty() || current().value == value);
}

bool TokenStream::skip_if(TokenType type, std::string_view value) {
  if (!at(type, value)) return false;
  next();
  return true;
}

const Token& TokenStream::expect(TokenType type, std::string_view value, std::string_view what) {
  if (!at(type, value)) fail("expected " + std::string(what) + ", got " + describe_current());
  return next();
}

void TokenStream::fail(const std::string& message) const { fail_at(current().line, message); }

std::string TokenStream::describe_current() const {
  switch (current().type) {
    case TokenType::Text:
      return "template text";
    case TokenType::VariableBegin:
      return "'{{'";
    case TokenType::VariableEnd:
      return "end of print statement '}}'";
    case TokenType::BlockBegin:
      return "'{%'";
    case TokenType::BlockEnd:
      return "end of statement block '%}'";
    case TokenType::String:
      return "a string";
    case TokenType::End:
      return "end of template";
    default:
      return "'" + current().value + "'";
  }
}

}  // namespace moe::jinja
