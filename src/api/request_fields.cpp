#include "api/request_fields.h"

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/generation_call.h"
#include "capture/routing_encoding.h"
#include "sampling/sampling_params.h"
#include "moe/message_fields.h"

namespace moe::api {
namespace {

// Range checks live with the sampler (sampling/sampling_params.cpp); checking each field alone
// through them tells which field to name in the error.
void check_sampler_range(const std::string& path, const msg::DrawSettings& only_this_field) {
  try {
    validate(only_this_field);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), path);
  }
}

void require_at_least(const FieldReader& reader, std::string_view name, int32_t value, int32_t minimum) {
  if (value < minimum) {
    throw ApiError::invalid_field(reader.path_of(name),
                                  "must be at least " + std::to_string(minimum) + ", got " + std::to_string(value));
  }
}

// A dtype name checked by the capture library's own parser, which lists the accepted names.
template <class Parse>
void check_dtype(const FieldReader& reader, std::string_view name, const std::string& value, Parse parse) {
  try {
    parse(value);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), reader.path_of(name));
  }
}

}  // namespace

nlohmann::json parse_json_body(std::string_view body) {
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    throw ApiError::bad_request(std::string("the request body is not valid JSON: ") + e.what());
  }
}

std::string_view sampling_field_name(SamplingDialect dialect, std::string_view name) {
  if (dialect == SamplingDialect::OpenAI) {
    if (name == "max_new_tokens") return "max_tokens";
    if (name == "min_new_tokens") return "min_tokens";
  }
  return name;
}

void read_sampling_fields(const FieldReader& reader, SamplingDialect dialect, msg::SamplingParams& params) {
  msg::visit_fields(params, [&](std::string_view name, auto& field) {
    reader.read(sampling_field_name(dialect, name), field);
  });
  check_sampler_range(reader.path_of("temperature"), {.temperature = params.temperature});
  check_sampler_range(reader.path_of("top_p"), {.top_p = params.top_p});
  check_sampler_range(reader.path_of("top_k"), {.top_k = params.top_k});
  check_sampler_range(reader.path_of("min_p"), {.min_p = params.min_p});
  require_at_least(reader, sampling_field_name(dialect, "max_new_tokens"), params.max_new_tokens, 1);
  require_at_least(reader, sampling_field_name(dialect, "min_new_tokens"), params.min_new_tokens, 0);
  require_at_least(reader, "n", params.n, 1);
}

void read_routing_fields(const FieldReader& reader, ApiKind api, msg::RoutingOptions& routing) {
  reader.read("return_routed_experts", routing.return_routed_experts);
  reader.read("routed_experts_dtype", routing.dtype);
  reader.read("routed_experts_include_last", routing.include_last);
  check_dtype(reader, "routed_experts_dtype", routing.dtype, parse_routed_experts_dtype);
  if (api == ApiKind::Generate) {
    reader.read("routed_experts_start_len", routing.start_len);
    require_at_least(reader, "routed_experts_start_len", routing.start_len, 0);
    reader.read("return_router_weights", routing.return_router_weights);
    reader.read("router_weights_dtype", routing.weights_dtype);
    check_dtype(reader, "router_weights_dtype", routing.weights_dtype, parse_router_weights_dtype);
  }
  routing.raw = true;
}

}  // namespace moe::api
