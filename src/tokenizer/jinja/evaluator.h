#pragma once
// Evaluates expressions against a scope. Failures become moe::Errors naming the expression's line.
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/scope.h"

namespace moe::tokenizer::jinja {

// The value of `expression` in `scope`.
Value evaluate(const Expr& expression, const Scope& scope);

}  // namespace moe::tokenizer::jinja
