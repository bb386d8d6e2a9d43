#include "jinja/value.h"

#include <utf8proc.h>

#include <charconv>
#include <cmath>
#include <cstdio>

#include "jinja/python_text.h"

namespace moe::jinja {

const Value* Dict::find(std::string_view key) const {
  // Linear search: template dicts (messages, tool schemas) hold a handful of keys.
  for (const auto& [name, value] : entries_)
    if (name == key) return &value;
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  for (auto& [name, existing] : entries_) {
    if (name == key) {
      existing = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

Value Value::list(std::vector<Value> items) {
  return Value(std::shared_ptr<const ListData>(std::make_shared<ListData>(ListData{std::move(items), false})));
}

Value Value::tuple(std::vector<Value> items) {
  return Value(std::shared_ptr<const ListData>(std::make_shared<ListData>(ListData{std::move(items), true})));
}

Value Value::dict(Dict dict) { return Value(std::shared_ptr<const Dict>(std::make_shared<Dict>(std::move(dict)))); }

Value Value::make_namespace(Dict attributes) {
  return Value(std::make_shared<Namespace>(Namespace{std::move(attributes)}));
}

Value Value::callable(std::string name, std::function<Value(const CallArgs&)> invoke) {
  return Value(std::shared_ptr<const Callable>(std::make_shared<Callable>(Callable{std::move(name), std::move(invoke)})));
}

int64_t Value::as_integer() const {
  if (kind() == Kind::Bool) return as_bool() ? 1 : 0;
  return std::get<int64_t>(data_);
}

double Value::as_double() const {
  if (kind() == Kind::Float) return std::get<double>(data_);
  return static_cast<double>(as_integer());
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return as_bool();
    case Kind::Int:
      return as_integer() != 0;
    case Kind::Float:
      return as_double() != 0.0;
    case Kind::String:
      return !as_string().empty();
    case Kind::List:
      return !as_list().items.empty();
    case Kind::Dict:
      return as_dict().size() != 0;
    case Kind::Namespace:
    case Kind::Callable:
      return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::List:
      return as_list().is_tuple ? "tuple" : "list";
    case Kind::Dict:
      return "dict";
    case Kind::Namespace:
      return "Namespace";
    case Kind::Callable:
      return "function";
  }
  return "object";
}

bool Value::same_object(const Value& other) const {
  if (kind() != other.kind()) return false;
  if (kind() == Kind::Namespace) return &as_namespace() == &other.as_namespace();
  if (kind() == Kind::Callable) return &as_callable() == &other.as_callable();
  return false;
}

void require_defined(const Value& value) {
  if (!value.is_undefined()) return;
  const std::string& hint = value.undefined_hint();
  throw RenderFailure(hint.empty() ? "use of an undefined value" : hint);
}

namespace {

// Python's str.isprintable() for one code point: everything but control, format, surrogate,
// private-use, unassigned and separator categories (the ASCII space excepted).
bool is_printable(char32_t c) {
  if (c == U' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

std::string string_repr(const std::string& text) {
  const std::u32string points = python_text::decode(text);
  // Python quotes with ' unless the text holds a ' and no ".
  const bool has_single = text.find('\'') != std::string::npos;
  const bool has_double = text.find('"') != std::string::npos;
  const char32_t quote = has_single && !has_double ? U'"' : U'\'';
  std::u32string out(1, quote);
  for (char32_t c : points) {
    if (c == quote || c == U'\\') {
      out += U'\\';
      out += c;
    } else if (c == U'\n') {
      out += U"\\n";
    } else if (c == U'\r') {
      out += U"\\r";
    } else if (c == U'\t') {
      out += U"\\t";
    } else if (is_printable(c)) {
      out += c;
    } else {
      char escape[16];
      if (c < 0x100)
        std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000)
        std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(escape, sizeof escape, "\\U%08x", static_cast<unsigned>(c));
      for (const char* p = escape; *p; ++p) out += static_cast<char32_t>(*p);
    }
  }
  out += quote;
  return python_text::encode(out);
}

std::string sequence_repr(const ListData& list) {
  std::string out = list.is_tuple ? "(" : "[";
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (i) out += ", ";
    out += to_repr(list.items[i]);
  }
  if (list.is_tuple && list.items.size() == 1) out += ",";
  out += list.is_tuple ? ")" : "]";
  return out;
}

std::string dict_repr(const Dict& dict) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : dict.entries()) {
    if (!first) out += ", ";
    first = false;
    out += string_repr(key) + ": " + to_repr(value);
  }
  return out + "}";
}

}  // namespace

std::string format_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form, e.g. "-1.25e-05", re-laid out as Python's repr.
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  const std::string sci(buf, result.ptr);
  const size_t e_pos = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e_pos; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out.append(digits, 0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char exp_text[16];
    std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out.append(exp_text);
  }
  if (exponent < 0) return out.append("0.").append(static_cast<size_t>(-exponent - 1), '0').append(digits);
  const size_t integer_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= integer_digits) return out.append(digits).append(integer_digits - digits.size(), '0').append(".0");
  return out.append(digits, 0, integer_digits).append(".").append(digits, integer_digits);
}

std::string to_str(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined:
      return "";
    case Value::Kind::String:
      return value.as_string();
    case Value::Kind::Namespace:
      return "<Namespace " + dict_repr(value.as_namespace().attributes) + ">";
    case Value::Kind::Callable:
      throw RenderFailure("cannot print the callable '" + value.as_callable().name + "' as text");
    default:
      return to_repr(value);
  }
}

std::string to_repr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined:
      return "Undefined";
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return value.as_bool() ? "True" : "False";
    case Value::Kind::Int:
      return std::to_string(value.as_integer());
    case Value::Kind::Float:
      return format_float(value.as_double());
    case Value::Kind::String:
      return string_repr(value.as_string());
    case Value::Kind::List:
      return sequence_repr(value.as_list());
    case Value::Kind::Dict:
      return dict_repr(value.as_dict());
    case Value::Kind::Namespace:
    case Value::Kind::Callable:
      return to_str(value);
  }
  return "";
}

}  // namespace moe::jinja
