#include "tokenizer/jinja/methods.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "tokenizer/jinja/call_args.h"
#include "tokenizer/jinja/python_text.h"

namespace moe::tokenizer::jinja {

namespace {

using Method = Value (*)(const Value& receiver, const CallArgs& args);
using MethodTable = std::unordered_map<std::string_view, Method>;

Value string_list(const std::vector<std::string>& pieces) {
  std::vector<Value> items;
  for (const auto& piece : pieces) items.push_back(Value::string(piece));
  return Value::list(std::move(items));
}

// str.startswith / str.endswith: the argument is a str or a tuple of alternatives.
Value affix_test(std::string_view callee, const Value& receiver, const CallArgs& args, bool at_start) {
  const Value affix = BoundArguments(callee, args, {"affix"}, 1).get_or(0, Value());
  const std::string& text = receiver.as_string();
  const auto matches = [&](const Value& candidate) {
    if (!candidate.is_string())
      throw RenderFailure(std::string(callee) + "() argument must be str or a tuple of str, not " +
                          candidate.type_name());
    const std::string& a = candidate.as_string();
    return a.size() <= text.size() &&
           (at_start ? text.compare(0, a.size(), a) == 0 : text.compare(text.size() - a.size(), a.size(), a) == 0);
  };
  if (affix.kind() == Value::Kind::List && affix.as_list().is_tuple) {
    const auto& options = affix.as_list().items;
    return Value::boolean(std::any_of(options.begin(), options.end(), matches));
  }
  return Value::boolean(matches(affix));
}

Value strip_method(std::string_view callee, const Value& receiver, const CallArgs& args, bool left, bool right) {
  const BoundArguments bound(callee, args, {"chars"});
  return Value::string(python_text::strip(receiver.as_string(), bound.optional_string(0), left, right));
}

Value split_method(std::string_view callee, const Value& receiver, const CallArgs& args, bool from_right) {
  const BoundArguments bound(callee, args, {"sep", "maxsplit"});
  return string_list(
      python_text::split(receiver.as_string(), bound.optional_string(0), bound.integer_or(1, -1), from_right));
}

// str.lower(), str.upper(), str.capitalize(): no arguments, new text.
template <std::string (*Transform)(std::string_view)>
Value case_method(const Value& receiver, const CallArgs& args) {
  BoundArguments("case method", args, {});
  return Value::string(Transform(receiver.as_string()));
}

const MethodTable& string_methods() {
  static const MethodTable table = {
      {"startswith", [](const Value& s, const CallArgs& a) { return affix_test("startswith", s, a, true); }},
      {"endswith", [](const Value& s, const CallArgs& a) { return affix_test("endswith", s, a, false); }},
      {"strip", [](const Value& s, const CallArgs& a) { return strip_method("strip", s, a, true, true); }},
      {"lstrip", [](const Value& s, const CallArgs& a) { return strip_method("lstrip", s, a, true, false); }},
      {"rstrip", [](const Value& s, const CallArgs& a) { return strip_method("rstrip", s, a, false, true); }},
      {"split", [](const Value& s, const CallArgs& a) { return split_method("split", s, a, false); }},
      {"rsplit", [](const Value& s, const CallArgs& a) { return split_method("rsplit", s, a, true); }},
      {"lower", case_method<python_text::lower>},
      {"upper", case_method<python_text::upper>},
      {"capitalize", case_method<python_text::capitalize>},
      {"replace",
       [](const Value& s, const CallArgs& a) {
         const BoundArguments bound("replace", a, {"old", "new", "count"}, 2);
         return Value::string(
             python_text::replace(s.as_string(), bound.string_at(0), bound.string_at(1), bound.integer_or(2, -1)));
       }},
      {"join",
       [](const Value& s, const CallArgs& a) {
         const Value iterable = BoundArguments("join", a, {"iterable"}, 1).get_or(0, Value());
         if (iterable.kind() != Value::Kind::List) throw RenderFailure("join() argument must be a list");
         std::string out;
         for (size_t i = 0; i < iterable.as_list().items.size(); ++i) {
           const Value& item = iterable.as_list().items[i];
           if (!item.is_string()) throw RenderFailure("join(): sequence item is " + item.type_name() + ", not str");
           out += (i ? s.as_string() : std::string()) + item.as_string();
         }
         return Value::string(std::move(out));
       }},
  };
  return table;
}

const MethodTable& dict_methods() {
  static const MethodTable table = {
      {"items",
       [](const Value& d, const CallArgs& a) {
         BoundArguments("items", a, {});
         std::vector<Value> pairs;
         for (const auto& [key, value] : d.as_dict().entries())
           pairs.push_back(Value::tuple({Value::string(key), value}));
         return Value::list(std::move(pairs));
       }},
      {"keys",
       [](const Value& d, const CallArgs& a) {
         BoundArguments("keys", a, {});
         std::vector<Value> keys;
         for (const auto& entry : d.as_dict().entries()) keys.push_back(Value::string(entry.first));
         return Value::list(std::move(keys));
       }},
      {"values",
       [](const Value& d, const CallArgs& a) {
         BoundArguments("values", a, {});
         std::vector<Value> values;
         for (const auto& entry : d.as_dict().entries()) values.push_back(entry.second);
         return Value::list(std::move(values));
       }},
      {"get",
       [](const Value& d, const CallArgs& a) {
         const BoundArguments bound("get", a, {"key", "default"}, 1);
         const Value key = bound.get_or(0, Value());
         const Value* found = key.is_string() ? d.as_dict().find(key.as_string()) : nullptr;
         return found ? *found : bound.get_or(1, Value::none());
       }},
  };
  return table;
}

// Python attributes of each type that no template here needs; naming one is an error, not Undefined.
bool is_unimplemented_attribute(Value::Kind kind, std::string_view name) {
  static constexpr std::string_view kStr[] = {
      "casefold", "center",     "count",      "encode",    "expandtabs", "find",       "format",
      "format_map", "index",    "isalnum",    "isalpha",   "isascii",    "isdecimal",  "isdigit",
      "isidentifier", "islower", "isnumeric", "isprintable", "isspace",  "istitle",    "isupper",
      "ljust",    "maketrans",  "partition",  "removeprefix", "removesuffix", "rfind", "rindex",
      "rjust",    "rpartition", "splitlines", "swapcase",  "title",      "translate",  "zfill"};
  static constexpr std::string_view kList[] = {"append", "clear",  "copy",    "count", "extend", "index",
                                               "insert", "pop",    "remove",  "reverse", "sort"};
  static constexpr std::string_view kDict[] = {"clear", "copy", "fromkeys", "pop", "popitem", "setdefault", "update"};
  const auto listed = [&](const auto& names) { return std::find(std::begin(names), std::end(names), name) != std::end(names); };
  if (kind == Value::Kind::String) return listed(kStr);
  if (kind == Value::Kind::List) return listed(kList);
  if (kind == Value::Kind::Dict) return listed(kDict);
  return false;
}

}  // namespace

std::optional<Value> find_method(const Value& receiver, const std::string& name) {
  const MethodTable* table = nullptr;
  if (receiver.is_string()) table = &string_methods();
  if (receiver.kind() == Value::Kind::Dict) table = &dict_methods();
  if (table) {
    if (auto it = table->find(name); it != table->end()) {
      const Method method = it->second;
      return Value::callable(name, [receiver, method](const CallArgs& args) { return method(receiver, args); });
    }
  }
  if (is_unimplemented_attribute(receiver.kind(), name))
    throw RenderFailure("unsupported method '" + receiver.type_name() + "." + name + "'");
  return std::nullopt;
}

}  // namespace moe::tokenizer::jinja
