#pragma once
// Expert-load statistics: how many tokens the router sent to each expert of each MoE
// layer since start (or the last reset); the input of load-balanced expert placement. Served as
// JSON over HTTP; the ZeroMQ client protocol sends the same fields as msgpack.
#include <nlohmann/json_fwd.hpp>

#include "moe/client.h"

namespace moe::api {

// The public struct the C++ client returns: counts[moe layer][expert] and the tokens counted.
using ExpertLoad = moe::ExpertLoad;

// {"num_moe_layers": L, "num_experts": E, "tokens": T, "counts": [[...], ...]}.
nlohmann::json expert_load_json(const ExpertLoad& load);

}  // namespace moe::api
