// Jinja's filters: those that map one value to another (text: trim, lower, replace, ...; numbers:
// int, float, abs; default; transformers' tojson), and those over sequences and mappings (length,
// first, last, list, items, reverse, join, and the functional map, select, reject, selectattr,
// rejectattr).
#include "jinja/scope.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <unordered_map>

#include "jinja/python_text.h"

namespace moe::jinja {

namespace {

using FilterTable = std::unordered_map<std::string_view, Filter>;

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

// Filters that turn one value into another: text, numbers, tojson, default.
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

// Jinja's attribute getter: "a.b.0" looks up a, then b, then element 0, as `x['a']['b'][0]`.
Value lookup_path(const Value& item, const std::string& path) {
  Value current = item;
  for (const std::string& part : python_text::split(path, std::string("."), -1, false)) {
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    // parse_int: a part of digits beyond 64 bits is a RenderFailure, not std::out_of_range.
    current = get_item(current, numeric ? Value::integer(*parse_int(part)) : Value::string(part));
  }
  return current;
}

Value length_filter(const Value& input, const CallArgs& args) {
  BoundArguments("length", args, {});
  switch (input.kind()) {
    case Value::Kind::Undefined:
      return Value::integer(0);
    case Value::Kind::String:
      return Value::integer(static_cast<int64_t>(python_text::length(input.as_string())));
    case Value::Kind::List:
      return Value::integer(static_cast<int64_t>(input.as_list().items.size()));
    case Value::Kind::Dict:
      return Value::integer(static_cast<int64_t>(input.as_dict().size()));
    default:
      throw RenderFailure("object of type '" + input.type_name() + "' has no len()");
  }
}

Value first_filter(const Value& input, const CallArgs& args) {
  BoundArguments("first", args, {});
  const std::vector<Value> items = iterate(input);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value last_filter(const Value& input, const CallArgs& args) {
  BoundArguments("last", args, {});
  const std::vector<Value> items = iterate(input);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value list_filter(const Value& input, const CallArgs& args) {
  BoundArguments("list", args, {});
  return Value::list(iterate(input));
}

Value reverse_filter(const Value& input, const CallArgs& args) {
  BoundArguments("reverse", args, {});
  if (input.is_string()) {
    std::u32string points = python_text::decode(input.as_string());
    std::reverse(points.begin(), points.end());
    return Value::string(python_text::encode(points));
  }
  std::vector<Value> items = iterate(input);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value items_filter(const Value& input, const CallArgs& args) {
  BoundArguments("items", args, {});
  if (input.is_undefined()) return Value::list({});
  if (input.kind() != Value::Kind::Dict) throw RenderFailure("Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [key, value] : input.as_dict().entries()) pairs.push_back(Value::tuple({Value::string(key), value}));
  return Value::list(std::move(pairs));
}

Value join_filter(const Value& input, const CallArgs& args) {
  const BoundArguments bound("join", args, {"d", "attribute"});
  const std::string separator = to_str(bound.get_or(0, Value::string("")));
  const std::optional<std::string> attribute = bound.optional_string(1);
  std::string out;
  bool first = true;
  for (const Value& item : iterate(input)) {
    if (!first) out += separator;
    first = false;
    out += to_str(attribute ? lookup_path(item, *attribute) : item);
  }
  return Value::string(std::move(out));
}

// map(attribute='x', default=d) or map('filter', args...).
Value map_filter(const Value& input, const CallArgs& args) {
  std::vector<Value> out;
  if (args.positional.empty()) {
    const BoundArguments bound("map", args, {"attribute", "default"}, 1);
    const std::string attribute = bound.string_at(0);
    for (const Value& item : iterate(input)) {
      Value mapped = lookup_path(item, attribute);
      out.push_back(mapped.is_undefined() && bound.has(1) ? bound.get_or(1, Value()) : mapped);
    }
    return Value::list(std::move(out));
  }
  if (!args.positional[0].is_string()) throw RenderFailure("map(): the filter name must be a string");
  const std::string& name = args.positional[0].as_string();
  const Filter filter = find_filter(name);
  if (!filter) throw RenderFailure("map(): unsupported filter '" + name + "'");
  CallArgs rest{{args.positional.begin() + 1, args.positional.end()}, args.keyword};
  for (const Value& item : iterate(input)) out.push_back(filter(item, rest));
  return Value::list(std::move(out));
}

// select/reject/selectattr/rejectattr: keeps items whose (attribute's) test result equals `keep`.
Value filter_by_test(const Value& input, const CallArgs& args, bool by_attribute, bool keep, const char* callee) {
  if (!args.keyword.empty()) throw RenderFailure(std::string(callee) + "() takes no keyword arguments");
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty() || !args.positional[0].is_string())
      throw RenderFailure(std::string(callee) + "() needs an attribute name");
    attribute = args.positional[next++].as_string();
  }
  Predicate predicate = nullptr;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) throw RenderFailure(std::string(callee) + "(): the test name must be a string");
    predicate = find_predicate(args.positional[next].as_string());
    if (!predicate) throw RenderFailure(std::string(callee) + "(): unsupported test '" + args.positional[next].as_string() + "'");
    ++next;
  }
  const CallArgs test_args{{args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end()}, {}};
  std::vector<Value> out;
  for (const Value& item : iterate(input)) {
    const Value subject = by_attribute ? lookup_path(item, attribute) : item;
    const bool passed = predicate ? predicate(subject, test_args) : subject.truthy();
    if (passed == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

// Filters over sequences: length, first, last, join, map, selectattr, ...
void add_sequence_filters(FilterTable& table) {
  table.emplace("length", length_filter);
  table.emplace("count", length_filter);
  table.emplace("first", first_filter);
  table.emplace("last", last_filter);
  table.emplace("list", list_filter);
  table.emplace("reverse", reverse_filter);
  table.emplace("items", items_filter);
  table.emplace("join", join_filter);
  table.emplace("map", map_filter);
  table.emplace("select", [](const Value& v, const CallArgs& a) { return filter_by_test(v, a, false, true, "select"); });
  table.emplace("reject", [](const Value& v, const CallArgs& a) { return filter_by_test(v, a, false, false, "reject"); });
  table.emplace("selectattr",
                [](const Value& v, const CallArgs& a) { return filter_by_test(v, a, true, true, "selectattr"); });
  table.emplace("rejectattr",
                [](const Value& v, const CallArgs& a) { return filter_by_test(v, a, true, false, "rejectattr"); });
}

}  // namespace

Filter find_filter(std::string_view name) {
  static const FilterTable table = [] {
    FilterTable t;
    add_scalar_filters(t);
    add_sequence_filters(t);
    return t;
  }();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace moe::jinja
