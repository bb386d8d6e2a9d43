#include "tokenizer/jinja/globals.h"

#include <ctime>

#include "common/error.h"
#include "tokenizer/jinja/call_args.h"
#include "tokenizer/jinja/value_text.h"

namespace moe::tokenizer::jinja {

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

}  // namespace moe::tokenizer::jinja
