#pragma once
// What names and calls resolve to while a template renders: the scopes of variables, the global
// functions every template sees, filters and tests by name, the binding of a call's arguments to a
// Python-style parameter list, and the evaluation of an expression against a scope.
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/value.h"

namespace moe::jinja {

struct Expr;

// The variables visible at one level of a render: the render variables, the template's top level,
// one loop iteration or one macro call. Lookups fall through to the enclosing scope, so a `set`
// inside a loop body never leaks out of it, as in Jinja.
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

// The global functions every chat template sees, by name: Jinja's range, dict and namespace, and
// the raise_exception and strftime_now that transformers adds. Render variables of the same name
// take precedence over them.
const Dict& builtin_globals();
// True for Jinja globals this renderer does not implement (lipsum, cycler, joiner), which must
// fail loudly rather than look undefined.
bool is_unsupported_global(std::string_view name);

// Jinja filters, the names after `|` (`messages | length`, `tool | tojson(indent=4)`), and Jinja
// tests, the names after `is` (`x is defined`, `n is divisibleby 3`), resolved when a template is
// parsed (filters.cpp, predicates.cpp). Each gets the value on the left of `|` or `is` and the
// arguments after its name.
using Filter = Value (*)(const Value& input, const CallArgs& args);
using Predicate = bool (*)(const Value& value, const CallArgs& args);

// The filter or test named `name`, or nullptr when this renderer does not implement it.
Filter find_filter(std::string_view name);
Predicate find_predicate(std::string_view name);

// The arguments of one call matched to a Python-style parameter list, so filters, methods and
// global functions accept positional and keyword arguments exactly where Python would, and reject
// the rest. The first `required` parameters must be given.
class BoundArguments {
 public:
  BoundArguments(std::string_view callee, const CallArgs& args, std::initializer_list<std::string_view> parameters,
                 size_t required = 0);

  // True when parameter i was passed.
  bool has(size_t i) const { return values_[i].has_value(); }
  // Parameter i, or `fallback` when it was not passed.
  Value get_or(size_t i, Value fallback) const;
  // Parameter i as a string; absent or None gives nullopt, another type fails.
  std::optional<std::string> optional_string(size_t i) const;
  // Parameter i as a string; fails unless it is one.
  std::string string_at(size_t i) const;
  // Parameter i as an int, or `fallback` when absent or None.
  int64_t integer_or(size_t i, int64_t fallback) const;

 private:
  [[noreturn]] void wrong_type(size_t i, const char* expected) const;

  std::string callee_;
  std::vector<std::string_view> names_;
  std::vector<std::optional<Value>> values_;
};

// The value of `expression` in `scope` (evaluator.cpp). Failures become moe::Errors naming the
// expression's line.
Value evaluate(const Expr& expression, const Scope& scope);

}  // namespace moe::jinja
