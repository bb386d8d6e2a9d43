#include "tokenizer/jinja/value_access.h"

#include <optional>

#include "tokenizer/jinja/methods.h"
#include "tokenizer/jinja/python_text.h"

namespace moe::tokenizer::jinja {

namespace {

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

}  // namespace moe::tokenizer::jinja
