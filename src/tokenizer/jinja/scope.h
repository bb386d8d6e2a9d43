#pragma once
// The variables visible at one level of a render: the render variables, the template's top level,
// one loop iteration or one macro call. Lookups fall through to the enclosing scope, so a `set`
// inside a loop body never leaks out of it, as in Jinja.
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

class Scope {
 public:
  explicit Scope(std::shared_ptr<const Scope> parent, Dict variables = {})
      : parent_(std::move(parent)), variables_(std::move(variables)) {}

  // The innermost binding of `name`, or nullptr.
  const Value* find(std::string_view name) const;
  // Binds `name` in this scope.
  void set(std::string name, Value value) { variables_.set(std::move(name), std::move(value)); }

 private:
  std::shared_ptr<const Scope> parent_;
  Dict variables_;
};

}  // namespace moe::tokenizer::jinja
