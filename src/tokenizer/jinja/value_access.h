#pragma once
// Attribute access, subscripts, slices and iteration as Jinja resolves them: `message.content` and
// `message['content']` both find the dict item, `text.strip` finds the str method, and anything
// missing is Undefined rather than an error.
#include <string>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

// `object.name`: a method of str/list/dict first (as Python's getattr), then a dict item or a
// namespace attribute; otherwise Undefined. Fails when `object` itself is Undefined.
Value get_attribute(const Value& object, const std::string& name);
// `object[key]`: a dict item or a list/str element (negative indexes count from the end) first,
// then, for a string key, the attribute; otherwise Undefined.
Value get_item(const Value& object, const Value& key);
// `object[start:stop:step]` on a list, tuple or str; each bound may be None/Undefined (omitted).
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step);
// What `for x in value` visits: list items, dict keys, str characters; Undefined is empty.
std::vector<Value> iterate(const Value& value);

}  // namespace moe::tokenizer::jinja
