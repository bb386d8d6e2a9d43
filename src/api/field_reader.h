#pragma once
// Typed reading of a JSON request's fields. Every error is an ApiError (400) that names the field
// by its path ("sampling_params.top_p", "messages[2].content"), so a client knows what to fix.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace moe::api {

// Conversions of one value, each throwing ApiError::invalid_field(path, "must be ...").
void read_value(const nlohmann::json& value, const std::string& path, bool& out);
// Integers; a float with an integral value (16.0, as some clients send) counts as one.
void read_value(const nlohmann::json& value, const std::string& path, int32_t& out);
void read_value(const nlohmann::json& value, const std::string& path, uint64_t& out);
// Any number (an integer where a float is expected, as `"temperature": 0`, is fine).
void read_value(const nlohmann::json& value, const std::string& path, float& out);
void read_value(const nlohmann::json& value, const std::string& path, std::string& out);
// Token ids: a list of non-negative integers.
void read_value(const nlohmann::json& value, const std::string& path, std::vector<int32_t>& out);
// A string or a list of strings (SGLang's and OpenAI's `"stop": "\n"`).
void read_value(const nlohmann::json& value, const std::string& path, std::vector<std::string>& out);

template <class T>
void read_value(const nlohmann::json& value, const std::string& path, std::optional<T>& out) {
  read_value(value, path, out.emplace());
}

// The path of element `index` of the list at `path`: "messages[2]".
std::string element_path(const std::string& path, size_t index);

// The fields of one JSON object of a request.
class FieldReader {
 public:
  // Throws ApiError when `object` is not a JSON object; `path` is its own path, "" for the body.
  FieldReader(const nlohmann::json& object, std::string path);

  // The field's value, or null when it is absent or JSON null (clients send null for "not given").
  const nlohmann::json* find(std::string_view name) const;
  // The path of a field, for error messages: "sampling_params.top_p".
  std::string path_of(std::string_view name) const;

  // Reads a field that is present into `out`; false, leaving `out` alone, when it is not.
  template <class T>
  bool read(std::string_view name, T& out) const {
    const nlohmann::json* value = find(name);
    if (value == nullptr) return false;
    read_value(*value, path_of(name), out);
    return true;
  }

 private:
  const nlohmann::json& object_;
  std::string path_;
};

}  // namespace moe::api
