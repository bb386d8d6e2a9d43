#include "api/field_reader.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace moe::api {
namespace {

using nlohmann::json;

// "a string", "an array"...: the JSON type a client actually sent, for error messages.
std::string described(const json& value) {
  const std::string name = value.type_name();
  const bool vowel = name.find_first_of("aeiou") == 0;
  return std::string(vowel ? "an " : "a ") + name;
}

[[noreturn]] void wrong_type(const json& value, const std::string& path, const std::string& expected) {
  throw ApiError::invalid_field(path, "must be " + expected + ", got " + described(value));
}

// An integer within [low, high]; a float of integral value counts.
template <class T>
T read_integer(const json& value, const std::string& path, T low, T high) {
  if (!value.is_number()) wrong_type(value, path, "an integer");
  bool in_range = false;
  if (value.is_number_unsigned()) {
    in_range = value.get<uint64_t>() <= static_cast<uint64_t>(high);
  } else if (value.is_number_integer()) {
    const auto v = value.get<int64_t>();
    in_range = v >= static_cast<int64_t>(low) && (v < 0 || static_cast<uint64_t>(v) <= static_cast<uint64_t>(high));
  } else {
    const double v = value.get<double>();
    // 2^digits is exact in a double, so the upper bound test is exact for every T used here.
    in_range = v == std::floor(v) && v >= static_cast<double>(low) && v < std::ldexp(1.0, std::numeric_limits<T>::digits);
  }
  if (!in_range) {
    throw ApiError::invalid_field(path, "must be an integer in [" + std::to_string(low) + ", " + std::to_string(high) +
                                            "], got " + value.dump());
  }
  return value.is_number_float() ? static_cast<T>(value.get<double>()) : value.get<T>();
}

}  // namespace

void read_value(const json& value, const std::string& path, bool& out) {
  if (!value.is_boolean()) wrong_type(value, path, "true or false");
  out = value.get<bool>();
}

void read_value(const json& value, const std::string& path, int32_t& out) {
  out = read_integer<int32_t>(value, path, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
}

void read_value(const json& value, const std::string& path, uint64_t& out) {
  out = read_integer<uint64_t>(value, path, 0, std::numeric_limits<uint64_t>::max());
}

void read_value(const json& value, const std::string& path, float& out) {
  if (!value.is_number()) wrong_type(value, path, "a number");
  out = value.get<float>();
}

void read_value(const json& value, const std::string& path, std::string& out) {
  if (!value.is_string()) wrong_type(value, path, "a string");
  out = value.get<std::string>();
}

void read_value(const json& value, const std::string& path, std::vector<int32_t>& out) {
  if (!value.is_array()) wrong_type(value, path, "a list of token ids");
  out.resize(value.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = read_integer<int32_t>(value[i], element_path(path, i), 0, std::numeric_limits<int32_t>::max());
  }
}

void read_value(const json& value, const std::string& path, std::vector<std::string>& out) {
  if (value.is_string()) {
    out.assign(1, value.get<std::string>());
    return;
  }
  if (!value.is_array()) wrong_type(value, path, "a string or a list of strings");
  out.resize(value.size());
  for (size_t i = 0; i < out.size(); ++i) read_value(value[i], element_path(path, i), out[i]);
}

std::string element_path(const std::string& path, size_t index) { return path + "[" + std::to_string(index) + "]"; }

FieldReader::FieldReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) {
    if (path_.empty()) throw ApiError::bad_request("the request body must be a JSON object, got " + described(object_));
    wrong_type(object_, path_, "an object");
  }
}

const json* FieldReader::find(std::string_view name) const {
  const auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string FieldReader::path_of(std::string_view name) const {
  return path_.empty() ? std::string(name) : path_ + "." + std::string(name);
}

}  // namespace moe::api
