#include "tokenizer/jinja/call_args.h"

#include <algorithm>

namespace moe::tokenizer::jinja {

BoundArguments::BoundArguments(std::string_view callee, const CallArgs& args,
                               std::initializer_list<std::string_view> parameters, size_t required)
    : callee_(callee), names_(parameters), values_(parameters.size()) {
  if (args.positional.size() > names_.size())
    throw RenderFailure(callee_ + "() takes at most " + std::to_string(names_.size()) + " argument(s), " +
                        std::to_string(args.positional.size()) + " given");
  for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = args.positional[i];
  for (const auto& [name, value] : args.keyword) {
    const auto it = std::find(names_.begin(), names_.end(), name);
    if (it == names_.end()) throw RenderFailure(callee_ + "() got an unexpected keyword argument '" + name + "'");
    auto& slot = values_[static_cast<size_t>(it - names_.begin())];
    if (slot) throw RenderFailure(callee_ + "() got multiple values for argument '" + name + "'");
    slot = value;
  }
  for (size_t i = 0; i < required; ++i)
    if (!values_[i]) throw RenderFailure(callee_ + "() missing required argument '" + std::string(names_[i]) + "'");
}

Value BoundArguments::get_or(size_t i, Value fallback) const { return values_[i] ? *values_[i] : std::move(fallback); }

std::optional<std::string> BoundArguments::optional_string(size_t i) const {
  if (!values_[i] || values_[i]->is_none()) return std::nullopt;
  if (!values_[i]->is_string()) wrong_type(i, "a string");
  return values_[i]->as_string();
}

std::string BoundArguments::string_at(size_t i) const {
  if (!values_[i] || !values_[i]->is_string()) wrong_type(i, "a string");
  return values_[i]->as_string();
}

int64_t BoundArguments::integer_or(size_t i, int64_t fallback) const {
  if (!values_[i] || values_[i]->is_none()) return fallback;
  if (!values_[i]->is_integral()) wrong_type(i, "an integer");
  return values_[i]->as_integer();
}

void BoundArguments::wrong_type(size_t i, const char* expected) const {
  const std::string got = values_[i] ? values_[i]->type_name() : "nothing";
  throw RenderFailure(callee_ + "(): argument '" + std::string(names_[i]) + "' must be " + expected + ", not " + got);
}

}  // namespace moe::tokenizer::jinja
