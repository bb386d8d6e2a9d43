#pragma once
// Binds the arguments of a call to a Python-style parameter list, so filters, methods and global
// functions accept positional and keyword arguments exactly where Python would, and reject the rest.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

// The arguments of one call matched to parameter names; the first `required` must be given.
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

}  // namespace moe::tokenizer::jinja
