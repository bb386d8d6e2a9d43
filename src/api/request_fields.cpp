#include "api/request_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/json_error_path.h"
#include "common/bounded_json.h"
#include "moe/enum_names.h"
#include "moe/message_fields.h"

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

template <msg::NamedEnum E>
void read_name(const json& value, const std::string& path, E& out) {
  if (!value.is_string()) wrong_type(value, path, "a string");
  const std::string name = value.get<std::string>();
  const std::optional<E> named = msg::enum_named<E>(name);
  if (!named) throw ApiError::invalid_field(path, msg::not_a_name<E>(name));
  out = *named;
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

void read_value(const json& value, const std::string& path, std::vector<std::vector<int64_t>>& out) {
  if (!value.is_array()) wrong_type(value, path, "a list of shapes");
  out.resize(value.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string shape_path = element_path(path, i);
    if (!value[i].is_array()) wrong_type(value[i], shape_path, "a shape (a list of sizes)");
    out[i].resize(value[i].size());
    for (size_t d = 0; d < out[i].size(); ++d)
      out[i][d] = read_integer<int64_t>(value[i][d], element_path(shape_path, d), 0, std::numeric_limits<int64_t>::max());
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

void read_value(const json& value, const std::string& path, std::vector<msg::TokenBias>& out) {
  if (!value.is_object()) wrong_type(value, path, "an object from token ids to biases");
  out.clear();
  for (const auto& [key, bias] : value.items()) {
    const std::string entry = path + "." + key;
    msg::TokenBias& token = out.emplace_back();
    size_t used = 0;
    try {
      const long id = std::stol(key, &used);
      if (used != key.size() || id < 0 || id > std::numeric_limits<int32_t>::max()) throw std::invalid_argument(key);
      token.id = static_cast<int32_t>(id);
    } catch (const std::logic_error&) {
      throw ApiError::invalid_field(path, "keys must be token ids, got \"" + key + "\"");
    }
    read_value(bias, entry, token.bias);
  }
}

void read_value(const json& value, const std::string& path, msg::RoutedExpertsDtype& out) {
  read_name(value, path, out);
}

void read_value(const json& value, const std::string& path, msg::RouterWeightsDtype& out) {
  read_name(value, path, out);
}

void read_value(const json& value, const std::string& path, msg::RoutedExpertsLayers& out) {
  read_name(value, path, out);
}

void read_value(const json& value, const std::string& path, msg::PauseMode& out) { read_name(value, path, out); }
void read_value(const json& value, const std::string& path, msg::MemoryTag& out) { read_name(value, path, out); }

void read_value(const json& value, const std::string& path, std::vector<msg::MemoryTag>& out) {
  if (!value.is_array()) wrong_type(value, path, "a list of tags");
  out.resize(value.size());
  for (size_t i = 0; i < value.size(); ++i) read_value(value[i], element_path(path, i), out[i]);
}

std::string element_path(const std::string& path, size_t index) { return path + "[" + std::to_string(index) + "]"; }

FieldReader::FieldReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) {
    if (path_.empty()) throw ApiError::bad_request("the request body must be a JSON object, got " + described(object_));
    wrong_type(object_, path_, "an object");
  }
}

const json* FieldReader::find(std::string_view name) const {
  asked_.emplace(name);
  const auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool any_value(const json&) { return true; }
bool is_false(const json& value) { return value == false; }
bool is_true(const json& value) { return value == true; }

void FieldReader::reject_unread(std::span<const IgnoredField> ignored) const {
  for (const auto& item : object_.items()) {
    // Named, not a structured binding: clang 14 cannot capture a binding in the lambda below.
    const std::string& name = item.key();
    const json& value = item.value();
    if (value.is_null() || asked_.count(name)) continue;
    const auto listed = std::find_if(ignored.begin(), ignored.end(), [&](const IgnoredField& f) { return f.name == name; });
    if (listed == ignored.end())
      throw ApiError::invalid_field(path_of(name), "is not a field this server knows (docs/http-api.md lists them)");
    if (!listed->is_noop(value))
      throw ApiError::invalid_field(path_of(name), "is not supported by this server, got " + value.dump());
  }
}

std::string FieldReader::path_of(std::string_view name) const {
  return path_.empty() ? std::string(name) : path_ + "." + std::string(name);
}

namespace {

template <class Json>
Json parse_body(std::string_view body) {
  try {
    return parse_bounded_json<Json>(body, "");
  } catch (const JsonOverLimit& e) {
    throw ApiError(400, e.what(), e.path());
  } catch (const nlohmann::json::parse_error& e) {
    throw ApiError::bad_request(std::string("the request body is not valid JSON: ") + e.what());
  } catch (const nlohmann::json::out_of_range&) {  // valid JSON text, but a number beyond a double (1e999)
    const std::string path = json_error_path(body);
    if (path.empty()) throw ApiError::bad_request("the request body is a number too large to represent");
    throw ApiError::invalid_field(path, "is a number too large to represent");
  }
}

}  // namespace

nlohmann::json parse_json_body(std::string_view body) { return parse_body<nlohmann::json>(body); }

nlohmann::ordered_json parse_ordered_json_body(std::string_view body) { return parse_body<nlohmann::ordered_json>(body); }

std::string_view sampling_field_name(SamplingDialect dialect, std::string_view name) {
  if (dialect == SamplingDialect::OpenAI) {
    if (name == "max_new_tokens") return "max_tokens";
    if (name == "min_new_tokens") return "min_tokens";
  }
  return name;
}

void read_sampling_fields(const FieldReader& reader, SamplingDialect dialect, msg::SamplingParams& params,
                          msg::RequestFieldNames& names) {
  msg::visit_fields(params, [&](std::string_view name, auto& field) {
    reader.read(sampling_field_name(dialect, name), field);
  });
  // SGLang names the seed sampling_seed; `seed` (vLLM's name, and this engine's) is the same setting.
  std::optional<uint64_t> sampling_seed;
  if (dialect == SamplingDialect::SGLang && reader.read("sampling_seed", sampling_seed)) {
    if (params.seed && *params.seed != *sampling_seed)
      throw ApiError::invalid_field(reader.path_of("sampling_seed"), "differs from `seed`: give one of the two");
    params.seed = sampling_seed;
  }
  names.sampling = reader.path_of("");
  names.min_new_tokens = reader.path_of(sampling_field_name(dialect, "min_new_tokens"));
  const std::string_view max_new_tokens = sampling_field_name(dialect, "max_new_tokens");
  names.max_new_tokens = reader.find(max_new_tokens) != nullptr ? reader.path_of(max_new_tokens) : std::string();
}

void read_routing_fields(const FieldReader& reader, ApiKind api, msg::RoutingOptions& routing) {
  reader.read("return_routed_experts", routing.return_routed_experts);
  reader.read("routed_experts_dtype", routing.dtype);
  reader.read("routed_experts_include_last", routing.include_last);
  reader.read("return_draft_routed_experts", routing.return_draft_routed_experts);
  reader.read("routed_experts_layers", routing.layers);
  if (api == ApiKind::Generate) {
    reader.read("routed_experts_start_len", routing.start_len);
    reader.read("return_router_weights", routing.return_router_weights);
    reader.read("router_weights_dtype", routing.weights_dtype);
  }
  routing.raw = true;
}

}  // namespace moe::api
