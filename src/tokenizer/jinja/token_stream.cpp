#include "tokenizer/jinja/token_stream.h"

#include "tokenizer/jinja/template_error.h"

namespace moe::tokenizer::jinja {

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

}  // namespace moe::tokenizer::jinja
