// Filters that map one value to another: text (trim, lower, replace, ...), numbers (int, float,
// abs), default, and transformers' tojson.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "tokenizer/jinja/call_args.h"
#include "tokenizer/jinja/filter_table.h"
#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/value_json.h"
#include "tokenizer/jinja/value_ops.h"
#include "tokenizer/jinja/value_text.h"

namespace moe::tokenizer::jinja {

namespace {

// A filter taking no arguments that maps str(input) to new text.
template <std::string (*Transform)(std::string_view)>
Value text_filter(const Value& input, const CallArgs& args) {
  BoundArguments("text filter", args, {});
  return Value::string(Transform(to_str(input)));
}

std::string identity(std::string_view text) { return std::string(text); }

// Python's int(text) for base 10: surrounding whitespace, a sign, digits with single underscores.
std::optional<int64_t> parse_int(const std::string& text) {
  const std::string s = python_text::strip(text, std::nullopt, true, true);
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  std::string digits = s.substr(0, i);
  bool previous_was_digit = false;
  for (; i < s.size(); ++i) {
    if (s[i] >= '0' && s[i] <= '9') {
      digits += s[i];
      previous_was_digit = true;
    } else if (s[i] == '_' && previous_was_digit && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9') {
      previous_was_digit = false;
    } else {
      return std::nullopt;
    }
  }
  if (digits.empty() || digits == "+" || digits == "-") return std::nullopt;
  errno = 0;
  const long long value = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) throw RenderFailure("integer '" + text + "' is too large");
  return value;
}

// Python's float(text): decimal or exponent notation, inf and nan; no hexadecimal.
std::optional<double> parse_float(const std::string& text) {
  std::string s = python_text::strip(text, std::nullopt, true, true);
  std::erase(s, '_');
  if (s.empty() || s.find_first_of("xX") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return value;
}

int64_t truncate_float(double d) {
  if (std::isinf(d)) throw RenderFailure("cannot convert float infinity to integer");
  if (std::abs(d) >= 9.2e18) throw RenderFailure("float too large to convert to a 64-bit integer");
  return static_cast<int64_t>(d);
}

// Jinja's int filter: int(value), else int(float(value)), else the default.
Value int_filter(const Value& input, const CallArgs& args) {
  const BoundArguments bound("int", args, {"default", "base"});
  if (bound.integer_or(1, 10) != 10) throw RenderFailure("int(): only base 10 is supported");
  const Value fallback = bound.get_or(0, Value::integer(0));
  require_defined(input);
  if (input.is_integral()) return Value::integer(input.as_integer());
  std::optional<double> as_float;
  if (input.kind() == Value::Kind::Float) as_float = input.as_double();
  if (input.is_string()) {
    if (std::optional<int64_t> parsed = parse_int(input.as_string())) return Value::integer(*parsed);
    as_float = parse_float(input.as_string());
  }
  if (!as_float || std::isnan(*as_float)) return fallback;
  return Value::integer(truncate_float(*as_float));
}

Value float_filter(const Value& input, const CallArgs& args) {
  const Value fallback = BoundArguments("float", args, {"default"}).get_or(0, Value::number(0.0));
  require_defined(input);
  if (input.is_numeric()) return Value::number(input.as_double());
  if (input.is_string())
    if (std::optional<double> parsed = parse_float(input.as_string())) return Value::number(*parsed);
  return fallback;
}

Value abs_filter(const Value& input, const CallArgs& args) {
  BoundArguments("abs", args, {});
  require_defined(input);
  if (!input.is_numeric()) throw RenderFailure("bad operand type for abs(): '" + input.type_name() + "'");
  const bool negative = input.is_integral() ? input.as_integer() < 0 : std::signbit(input.as_double());
  return negative ? negate(input) : unary_plus(input);
}

Value trim_filter(const Value& input, const CallArgs& args) {
  const BoundArguments bound("trim", args, {"chars"});
  return Value::string(python_text::strip(to_str(input), bound.optional_string(0), true, true));
}

Value replace_filter(const Value& input, const CallArgs& args) {
  const BoundArguments bound("replace", args, {"old", "new", "count"}, 2);
  return Value::string(python_text::replace(to_str(input), to_str(bound.get_or(0, Value())),
                                            to_str(bound.get_or(1, Value())), bound.integer_or(2, -1)));
}

Value default_filter(const Value& input, const CallArgs& args) {
  const BoundArguments bound("default", args, {"default_value", "boolean"});
  const bool use_default = input.is_undefined() || (bound.get_or(1, Value::boolean(false)).truthy() && !input.truthy());
  return use_default ? bound.get_or(0, Value::string("")) : input;
}

// json.dumps' indent: a count of spaces or the indent text itself.
std::optional<std::string> indent_text(const Value& indent) {
  if (indent.is_undefined() || indent.is_none()) return std::nullopt;
  if (indent.is_string()) return indent.as_string();
  if (indent.is_integral()) return std::string(static_cast<size_t>(std::max<int64_t>(0, indent.as_integer())), ' ');
  throw RenderFailure("tojson(): indent must be an int or a str, not " + indent.type_name());
}

// transformers replaces Jinja's tojson with json.dumps(x, ensure_ascii=False, ...), without HTML escaping.
Value tojson_filter(const Value& input, const CallArgs& args) {
  const BoundArguments bound("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions options;
  options.ensure_ascii = bound.get_or(0, Value::boolean(false)).truthy();
  options.indent = indent_text(bound.get_or(1, Value()));
  const Value separators = bound.get_or(2, Value::none());
  if (!separators.is_none()) {
    if (separators.kind() != Value::Kind::List || separators.as_list().items.size() != 2 ||
        !separators.as_list().items[0].is_string() || !separators.as_list().items[1].is_string())
      throw RenderFailure("tojson(): separators must be a pair of strings");
    options.item_separator = separators.as_list().items[0].as_string();
    options.key_separator = separators.as_list().items[1].as_string();
  }
  options.sort_keys = bound.get_or(3, Value::boolean(false)).truthy();
  return Value::string(dump_json(input, options));
}

}  // namespace

void add_scalar_filters(FilterTable& table) {
  table.emplace("string", text_filter<identity>);
  // Without autoescaping, Markup(value) renders as str(value).
  table.emplace("safe", text_filter<identity>);
  table.emplace("lower", text_filter<python_text::lower>);
  table.emplace("upper", text_filter<python_text::upper>);
  table.emplace("capitalize", text_filter<python_text::capitalize>);
  table.emplace("trim", trim_filter);
  table.emplace("replace", replace_filter);
  table.emplace("default", default_filter);
  table.emplace("d", default_filter);
  table.emplace("int", int_filter);
  table.emplace("float", float_filter);
  table.emplace("abs", abs_filter);
  table.emplace("tojson", tojson_filter);
}

}  // namespace moe::tokenizer::jinja
