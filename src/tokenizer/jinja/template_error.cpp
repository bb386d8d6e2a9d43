#include "tokenizer/jinja/template_error.h"

#include "common/error.h"

namespace moe::tokenizer::jinja {

void fail_at(int line, const std::string& message) {
  throw moe::Error("chat template line " + std::to_string(line) + ": " + message);
}

}  // namespace moe::tokenizer::jinja
