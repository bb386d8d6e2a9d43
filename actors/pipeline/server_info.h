#pragma once
// GET /get_server_info: the flags a server runs with, under SGLang's names, and the sizes the engine
// derived from them (engine/engine_sizing.h), so a client can see what a server was actually given.
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "engine/engine_sizing.h"
#include "pipeline/serve_options.h"

namespace moe::actors {

// --served-model-name, or else the name of the model's directory: the `model` OpenAI requests name
// and /v1/models lists.
std::string served_model_name(const ServeOptions& options);

// `weights` are those serving now (a weight update changes them); `worker`, the accepted worker's
// settings, if one is accepted.
nlohmann::json server_info_json(const ServeOptions& options, const EngineSizing& sizing, const ServingWeights& weights,
                                const std::optional<msg::WorkerSettings>& worker);

}  // namespace moe::actors
