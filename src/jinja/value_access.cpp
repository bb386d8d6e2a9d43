// Attribute access, subscripts, slices and iteration, and the str/dict methods an attribute may be.
#include "jinja/value.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "jinja/python_text.h"
#include "jinja/scope.h"

namespace moe::jinja {

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

// `receiver.name` as a bound method when the receiver's Python type has a method of that name;
// nullopt when Python has no such attribute (so a dict item may be looked up instead). Throws
// RenderFailure for a real Python method this renderer does not implement.
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

Value missing(const Value& object, const std::string& what) {
  const std::string owner = object.is_none() ? "None" : object.type_name() + " object";
  return Value::undefined("'" + owner + "' has no " + what);
}

// Python's slice.indices(): clamps one bound into the range a slice of `length` items can use.
int64_t clamp_bound(const Value& bound, int64_t length, int64_t step, bool is_start) {
  if (bound.is_undefined() || bound.is_none()) {
    if (step > 0) return is_start ? 0 : length;
    return is_start ? length - 1 : -1;
  }
  if (!bound.is_integral()) throw RenderFailure("slice indices must be integers or None");
  int64_t index = bound.as_integer();
  if (index < 0) {
    index += length;
    if (index < 0) index = step < 0 ? -1 : 0;
  } else if (index >= length) {
    index = step < 0 ? length - 1 : length;
  }
  return index;
}

// The positions a slice visits in a sequence of `length` items.
std::vector<size_t> slice_positions(int64_t length, const Value& start, const Value& stop, const Value& step) {
  int64_t stride = 1;
  if (!step.is_undefined() && !step.is_none()) {
    if (!step.is_integral()) throw RenderFailure("slice indices must be integers or None");
    stride = step.as_integer();
    if (stride == 0) throw RenderFailure("slice step cannot be zero");
  }
  const int64_t first = clamp_bound(start, length, stride, true);
  const int64_t end = clamp_bound(stop, length, stride, false);
  std::vector<size_t> positions;
  for (int64_t i = first; stride > 0 ? i < end : i > end; i += stride) positions.push_back(static_cast<size_t>(i));
  return positions;
}

// A normalised index into a sequence of `length` items, or nullopt when out of range.
std::optional<size_t> element_position(const Value& key, size_t length) {
  int64_t index = key.as_integer();
  if (index < 0) index += static_cast<int64_t>(length);
  if (index < 0 || index >= static_cast<int64_t>(length)) return std::nullopt;
  return static_cast<size_t>(index);
}

}  // namespace

Value get_attribute(const Value& object, const std::string& name) {
  require_defined(object);
  if (std::optional<Value> method = find_method(object, name)) return *method;
  const Value* found = nullptr;
  if (object.kind() == Value::Kind::Dict) found = object.as_dict().find(name);
  if (object.kind() == Value::Kind::Namespace) found = object.as_namespace().attributes.find(name);
  return found ? *found : missing(object, "attribute '" + name + "'");
}

Value get_item(const Value& object, const Value& key) {
  require_defined(object);
  if (key.is_integral() && object.kind() == Value::Kind::List) {
    const auto& items = object.as_list().items;
    if (auto position = element_position(key, items.size())) return items[*position];
  } else if (key.is_integral() && object.is_string()) {
    const std::u32string points = python_text::decode(object.as_string());
    if (auto position = element_position(key, points.size()))
      return Value::string(python_text::encode(points.substr(*position, 1)));
  } else if (key.is_string()) {
    // Subscripts prefer the item: d['items'] is the key "items", d.items the method.
    if (object.kind() == Value::Kind::Dict)
      if (const Value* found = object.as_dict().find(key.as_string())) return *found;
    return get_attribute(object, key.as_string());
  }
  return missing(object, key.is_integral() ? "element " + std::to_string(key.as_integer()) : "item of type " + key.type_name());
}

Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  require_defined(object);
  if (object.is_string()) {
    const std::u32string points = python_text::decode(object.as_string());
    std::u32string out;
    for (size_t i : slice_positions(static_cast<int64_t>(points.size()), start, stop, step)) out += points[i];
    return Value::string(python_text::encode(out));
  }
  if (object.kind() == Value::Kind::List) {
    const ListData& list = object.as_list();
    std::vector<Value> out;
    for (size_t i : slice_positions(static_cast<int64_t>(list.items.size()), start, stop, step))
      out.push_back(list.items[i]);
    return list.is_tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  return missing(object, "slice");
}

std::vector<Value> iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::List:
      return value.as_list().items;
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      for (const auto& entry : value.as_dict().entries()) keys.push_back(Value::string(entry.first));
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> characters;
      for (char32_t c : python_text::decode(value.as_string()))
        characters.push_back(Value::string(python_text::encode(std::u32string(1, c))));
      return characters;
    }
    default:
      throw RenderFailure("'" + value.type_name() + "' object is not iterable");
  }
}

}  // namespace moe::jinja
