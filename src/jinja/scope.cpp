#include "jinja/scope.h"

#include <algorithm>
#include <ctime>

#include "common/error.h"

namespace moe::jinja {

const Value* Scope::find(std::string_view name) const {
  for (const Scope* scope = this; scope; scope = scope->parent_.get())
    if (const Value* value = scope->variables_.find(name)) return value;
  return nullptr;
}

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

namespace {

// Jinja's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr int64_t kMaxRangeLength = 100000;

Value range_function(const CallArgs& args) {
  if (!args.keyword.empty()) throw RenderFailure("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) throw RenderFailure("range() expects 1 to 3 arguments");
  for (const Value& v : p)
    if (!v.is_integral()) throw RenderFailure("range(): '" + v.type_name() + "' object cannot be interpreted as an integer");
  const int64_t start = p.size() == 1 ? 0 : p[0].as_integer();
  const int64_t stop = p.size() == 1 ? p[0].as_integer() : p[1].as_integer();
  const int64_t step = p.size() == 3 ? p[2].as_integer() : 1;
  if (step == 0) throw RenderFailure("range() arg 3 must not be zero");
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(items.size()) == kMaxRangeLength)
      throw RenderFailure("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    items.push_back(Value::integer(i));
  }
  return Value::list(std::move(items));
}

// dict(**kwargs) and namespace(mapping, **kwargs) build their attributes the same way.
Dict attributes_from(const CallArgs& args, const char* callee) {
  Dict attributes;
  if (args.positional.size() > 1) throw RenderFailure(std::string(callee) + "() takes at most 1 positional argument");
  if (!args.positional.empty()) {
    if (args.positional[0].kind() != Value::Kind::Dict)
      throw RenderFailure(std::string(callee) + "(): the positional argument must be a dict");
    attributes = args.positional[0].as_dict();
  }
  for (const auto& [name, value] : args.keyword) attributes.set(name, value);
  return attributes;
}

Value raise_exception_function(const CallArgs& args) {
  const Value message = BoundArguments("raise_exception", args, {"message"}, 1).get_or(0, Value());
  // transformers raises TemplateError(message): the template's own words reach the user unchanged.
  throw moe::Error(to_str(message));
}

// datetime.now().strftime(format), in local time.
Value strftime_now_function(const CallArgs& args) {
  const std::string format = BoundArguments("strftime_now", args, {"format"}, 1).string_at(0);
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::string out(format.size() * 4 + 64, '\0');
  const size_t written = format.empty() ? 0 : std::strftime(out.data(), out.size(), format.c_str(), &local);
  if (written == 0 && !format.empty()) throw RenderFailure("strftime_now(): the format expands to nothing or too much");
  out.resize(written);
  return Value::string(std::move(out));
}

}  // namespace

const Dict& builtin_globals() {
  static const Dict globals = [] {
    Dict d;
    d.set("range", Value::callable("range", range_function));
    d.set("dict", Value::callable("dict", [](const CallArgs& a) { return Value::dict(attributes_from(a, "dict")); }));
    d.set("namespace", Value::callable("namespace", [](const CallArgs& a) {
            return Value::make_namespace(attributes_from(a, "namespace"));
          }));
    d.set("raise_exception", Value::callable("raise_exception", raise_exception_function));
    d.set("strftime_now", Value::callable("strftime_now", strftime_now_function));
    return d;
  }();
  return globals;
}

bool is_unsupported_global(std::string_view name) { return name == "lipsum" || name == "cycler" || name == "joiner"; }

}  // namespace moe::jinja
