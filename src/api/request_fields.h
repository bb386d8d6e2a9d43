#pragma once
// Field groups that several endpoints share: sampling settings (named SGLang's or OpenAI's way)
// and the routed-experts options. Internal to src/api (the request parsers).
#include "api/field_reader.h"
#include "api/generation_call.h"
#include "moe/messages.h"

namespace moe::api {

// How an API names the sampling fields: OpenAI says max_tokens and min_tokens where SGLang says
// max_new_tokens and min_new_tokens; the other names are the same.
enum class SamplingDialect { SGLang, OpenAI };

// The name `dialect` gives to the SamplingParams field `name`.
std::string_view sampling_field_name(SamplingDialect dialect, std::string_view name);

// Reads every SamplingParams field present in `reader` and checks the values' ranges, naming the
// field in the ApiError. `params` keeps its values (the endpoint's defaults) for absent fields.
void read_sampling_fields(const FieldReader& reader, SamplingDialect dialect, msg::SamplingParams& params);

// Reads the routed-experts request fields at the top level of `reader`: return_routed_experts,
// routed_experts_dtype, routed_experts_include_last; on /generate also routed_experts_start_len,
// return_router_weights and router_weights_dtype (OpenAI answers split rows at the prompt, which
// needs rows from position 0). Sets raw = true: the HTTP layer encodes the rows itself.
void read_routing_fields(const FieldReader& reader, ApiKind api, msg::RoutingOptions& routing);

}  // namespace moe::api
