// Filters over sequences and mappings: length, first, last, list, items, reverse, join, and the
// functional ones (map, select, reject, selectattr, rejectattr).
#include <algorithm>

#include "tokenizer/jinja/call_args.h"
#include "tokenizer/jinja/filter_table.h"
#include "tokenizer/jinja/predicates.h"
#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/value_access.h"
#include "tokenizer/jinja/value_text.h"

namespace moe::tokenizer::jinja {

namespace {

// Jinja's attribute getter: "a.b.0" looks up a, then b, then element 0, as `x['a']['b'][0]`.
Value lookup_path(const Value& item, const std::string& path) {
  Value current = item;
  for (const std::string& part : python_text::split(path, std::string("."), -1, false)) {
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = get_item(current, numeric ? Value::integer(std::stoll(part)) : Value::string(part));
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

}  // namespace

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

}  // namespace moe::tokenizer::jinja
