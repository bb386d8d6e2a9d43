#include "jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/bounded_json.h"
#include "jinja/python_text.h"

namespace moe::jinja {

namespace {

// Writes one value the way Python's json encoder walks it (json/encoder.py's _iterencode).
class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& options)
      : options_(options),
        item_separator_(options.item_separator.value_or(options.indent ? "," : ", ")),
        key_separator_(options.key_separator.value_or(": ")) {}

  std::string finish(const Value& value) {
    write(value, 0);
    return std::move(out_);
  }

 private:
  void write(const Value& value, int level) {
    switch (value.kind()) {
      case Value::Kind::None:
        out_ += "null";
        return;
      case Value::Kind::Bool:
        out_ += value.as_bool() ? "true" : "false";
        return;
      case Value::Kind::Int:
        out_ += std::to_string(value.as_integer());
        return;
      case Value::Kind::Float:
        write_float(value.as_double());
        return;
      case Value::Kind::String:
        write_string(value.as_string());
        return;
      case Value::Kind::List:
        write_list(value.as_list().items, level);
        return;
      case Value::Kind::Dict:
        write_dict(value.as_dict(), level);
        return;
      default:
        throw RenderFailure("Object of type " + value.type_name() + " is not JSON serializable");
    }
  }

  void write_float(double d) {
    if (std::isnan(d))
      out_ += "NaN";
    else if (std::isinf(d))
      out_ += d < 0 ? "-Infinity" : "Infinity";
    else
      out_ += format_float(d);
  }

  void write_string(const std::string& text) {
    out_ += '"';
    for (char32_t c : python_text::decode(text)) {
      switch (c) {
        case U'"':
          out_ += "\\\"";
          break;
        case U'\\':
          out_ += "\\\\";
          break;
        case U'\n':
          out_ += "\\n";
          break;
        case U'\r':
          out_ += "\\r";
          break;
        case U'\t':
          out_ += "\\t";
          break;
        case U'\b':
          out_ += "\\b";
          break;
        case U'\f':
          out_ += "\\f";
          break;
        default:
          if (c < 0x20 || (options_.ensure_ascii && c > 0x7E))
            write_unicode_escape(c);
          else
            out_ += python_text::encode(std::u32string(1, c));
      }
    }
    out_ += '"';
  }

  // \uXXXX in lower-case hex, as a surrogate pair above the BMP.
  void write_unicode_escape(char32_t c) {
    char buf[16];
    if (c >= 0x10000) {
      const char32_t v = c - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 | (v >> 10)),
                    static_cast<unsigned>(0xDC00 | (v & 0x3FF)));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
    }
    out_ += buf;
  }

  // The text between two items of a container at `level`.
  std::string separator_inside(int level) const {
    return options_.indent ? item_separator_ + newline_indent(level + 1) : item_separator_;
  }

  std::string newline_indent(int level) const {
    std::string text = "\n";
    for (int i = 0; i < level; ++i) text += *options_.indent;
    return text;
  }

  void write_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    if (options_.indent) out_ += newline_indent(level + 1);
    const std::string separator = separator_inside(level);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += separator;
      write(items[i], level + 1);
    }
    if (options_.indent) out_ += newline_indent(level);
    out_ += ']';
  }

  void write_dict(const Dict& dict, int level) {
    if (dict.size() == 0) {
      out_ += "{}";
      return;
    }
    std::vector<const Dict::Entry*> entries;
    for (const auto& entry : dict.entries()) entries.push_back(&entry);
    if (options_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
    out_ += '{';
    if (options_.indent) out_ += newline_indent(level + 1);
    const std::string separator = separator_inside(level);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out_ += separator;
      write_string(entries[i]->first);
      out_ += key_separator_;
      write(entries[i]->second, level + 1);
    }
    if (options_.indent) out_ += newline_indent(level);
    out_ += '}';
  }

  const JsonDumpOptions& options_;
  const std::string item_separator_, key_separator_;
  std::string out_;
};

// `depth` is the level of a container being converted (the top-level value's is 1).
void check_depth(size_t depth) {
  if (depth > kMaxJsonDepth)
    throw RenderFailure("objects and arrays nest deeper than " + std::to_string(kMaxJsonDepth) +
                        " levels (the most this server accepts)");
}

// The value of `json`, which sits inside depth - 1 objects and arrays.
Value value_at_depth(const nlohmann::ordered_json& json, size_t depth) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t n = json.get<uint64_t>();
      if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw RenderFailure("integer " + std::to_string(n) + " is too large for a chat template");
      return Value::integer(static_cast<int64_t>(n));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      check_depth(depth);
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(value_at_depth(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      check_depth(depth);
      Dict dict;
      for (const auto& [key, item] : json.items()) dict.set(key, value_at_depth(item, depth + 1));
      return Value::dict(std::move(dict));
    }
    default:
      throw RenderFailure("JSON binary values cannot be passed to a chat template");
  }
}

}  // namespace

Value value_from_json(const nlohmann::ordered_json& json) { return value_at_depth(json, 1); }

std::string dump_json(const Value& value, const JsonDumpOptions& options) { return JsonWriter(options).finish(value); }

}  // namespace moe::jinja
