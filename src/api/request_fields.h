#pragma once
// Reading the fields of a JSON request, internal to src/api (the request parsers). Every error is
// an ApiError (400) that names the field by its path ("sampling_params.top_p", "messages[2].content"),
// so a client knows what to fix.
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/generation_call.h"
#include "moe/messages.h"

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
// Tensor shapes: a list of lists of non-negative integers.
void read_value(const nlohmann::json& value, const std::string& path, std::vector<std::vector<int64_t>>& out);
// A string or a list of strings (SGLang's and OpenAI's `"stop": "\n"`).
void read_value(const nlohmann::json& value, const std::string& path, std::vector<std::string>& out);
// OpenAI's logit_bias: an object from token ids (decimal strings) to numbers.
void read_value(const nlohmann::json& value, const std::string& path, std::vector<msg::TokenBias>& out);
// A value's name (moe/enum_names.h): "int32", "float16".
void read_value(const nlohmann::json& value, const std::string& path, msg::RoutedExpertsDtype& out);
void read_value(const nlohmann::json& value, const std::string& path, msg::RouterWeightsDtype& out);
void read_value(const nlohmann::json& value, const std::string& path, msg::RoutedExpertsLayers& out);
void read_value(const nlohmann::json& value, const std::string& path, msg::PauseMode& out);
void read_value(const nlohmann::json& value, const std::string& path, msg::MemoryTag& out);
// A list of memory tags.
void read_value(const nlohmann::json& value, const std::string& path, std::vector<msg::MemoryTag>& out);

template <class T>
void read_value(const nlohmann::json& value, const std::string& path, std::optional<T>& out) {
  read_value(value, path, out.emplace());
}

// The path of element `index` of the list at `path`: "messages[2]".
std::string element_path(const std::string& path, size_t index);

// A field the engine accepts without acting on it, when its value is one that changes nothing here
// (`is_noop`): fields SGLang's and OpenAI's clients commonly send. Any other value is refused, so
// a request that relies on one fails loudly instead of being answered as if it were absent.
struct IgnoredField {
  std::string_view name;
  bool (*is_noop)(const nlohmann::json& value);
};
bool any_value(const nlohmann::json& value);
bool is_false(const nlohmann::json& value);
bool is_true(const nlohmann::json& value);

// The fields of one JSON object of a request.
class FieldReader {
 public:
  // Throws ApiError when `object` is not a JSON object; `path` is its own path, "" for the body.
  FieldReader(const nlohmann::json& object, std::string path);

  // The field's value, or null when it is absent or JSON null (clients send null for "not given").
  const nlohmann::json* find(std::string_view name) const;
  // The path of a field, for error messages: "sampling_params.top_p"; of "" the prefix of them all.
  std::string path_of(std::string_view name) const;
  // Refuses (400 naming it) the first non-null field that no find() or read() asked for, unless
  // `ignored` lists it with a value that changes nothing: no field a client sends is dropped silently.
  void reject_unread(std::span<const IgnoredField> ignored = {}) const;

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
  mutable std::set<std::string, std::less<>> asked_;  // every name find() was asked for
};

// Field groups that several endpoints share: sampling settings (named SGLang's or OpenAI's way)
// and the routed-experts options.

// How an API names the sampling fields: OpenAI says max_tokens and min_tokens where SGLang says
// max_new_tokens and min_new_tokens; the other names are the same.
enum class SamplingDialect { SGLang, OpenAI };

// The name `dialect` gives to the SamplingParams field `name`.
std::string_view sampling_field_name(SamplingDialect dialect, std::string_view name);

// Reads every SamplingParams field present in `reader` (the front door checks their values).
// `params` keeps its values (the endpoint's defaults) for absent fields; `names` gets the paths of
// the fields as this request names them, max_new_tokens (max_tokens in OpenAI's) only when given.
void read_sampling_fields(const FieldReader& reader, SamplingDialect dialect, msg::SamplingParams& params,
                          msg::RequestFieldNames& names);

// Reads the routed-experts request fields at the top level of `reader`: return_routed_experts,
// routed_experts_dtype, routed_experts_include_last, return_draft_routed_experts, routed_experts_layers; on
// /generate also routed_experts_start_len,
// return_router_weights and router_weights_dtype (OpenAI answers split rows at the prompt, which
// needs rows from position 0). Sets raw = true: the HTTP layer encodes the rows itself.
void read_routing_fields(const FieldReader& reader, ApiKind api, msg::RoutingOptions& routing);

}  // namespace moe::api
