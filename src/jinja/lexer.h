#pragma once
// Template source to tokens, and the cursor both parsers read them with. The lexer works the way
// Jinja's does with transformers' settings (trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False): literal text with the whitespace control of `{%- -%}`, `{{- -}}`
// and `{#- -#}` already applied, and the tokens of the expressions inside tags, string and number
// literals decoded as Python would. Comments are dropped.
#include <string>
#include <string_view>
#include <vector>

namespace moe::jinja {

// The kinds of token the parser reads.
enum class TokenType {
  Text,           // literal template text
  VariableBegin,  // {{
  VariableEnd,    // }}
  BlockBegin,     // {%
  BlockEnd,       // %}
  Name,           // identifier or keyword
  String,         // string literal, escapes decoded
  Integer,        // decimal integer literal (underscores removed)
  Float,          // float literal (underscores removed)
  Operator,       // punctuation: + - * / // % ** ~ == != < <= > >= = . : | , ; ( ) [ ] { }
  End,            // end of the template
};

// One token and the template line it starts on (1-based).
struct Token {
  TokenType type;
  std::string value;
  int line;
};

// Tokenizes a whole template. Throws moe::Error naming the line for an unterminated tag, comment
// or string and for a character no expression can contain.
std::vector<Token> tokenize(std::string_view source);

// A cursor over the lexer's tokens with the look-ahead and expectation helpers both parsers use.
class TokenStream {
 public:
  explicit TokenStream(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  const Token& current() const { return tokens_[pos_]; }
  // The token after the current one (End at the end).
  const Token& look() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  // Returns the current token and moves past it.
  const Token& next();

  // True when the current token has this type (and this value, when given).
  bool at(TokenType type, std::string_view value = {}) const;
  // The name keyword or operator `value` at the current position.
  bool at_name(std::string_view value) const { return at(TokenType::Name, value); }
  bool at_operator(std::string_view value) const { return at(TokenType::Operator, value); }
  // Moves past the current token when it matches; returns whether it did.
  bool skip_if(TokenType type, std::string_view value = {});
  // Moves past the current token, failing with "expected <what>" when it does not match.
  const Token& expect(TokenType type, std::string_view value, std::string_view what);

  // Throws moe::Error at the current token's line.
  [[noreturn]] void fail(const std::string& message) const;
  // How the current token reads in an error message.
  std::string describe_current() const;

 private:
  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace moe::jinja
