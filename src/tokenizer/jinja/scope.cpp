#include "tokenizer/jinja/scope.h"

namespace moe::tokenizer::jinja {

const Value* Scope::find(std::string_view name) const {
  for (const Scope* scope = this; scope; scope = scope->parent_.get())
    if (const Value* value = scope->variables_.find(name)) return value;
  return nullptr;
}

}  // namespace moe::tokenizer::jinja
