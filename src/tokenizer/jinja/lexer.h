#pragma once
// Splits a template into tokens the way Jinja's lexer does with transformers' settings
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False): literal text with the
// whitespace control of `{%- -%}`, `{{- -}}` and `{#- -#}` already applied, and the tokens of
// the expressions inside tags. Comments are dropped.
#include <string>
#include <string_view>
#include <vector>

namespace moe::tokenizer::jinja {

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

}  // namespace moe::tokenizer::jinja
