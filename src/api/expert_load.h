#pragma once
// Expert-load statistics (issue 5): how many tokens the router sent to each expert of each MoE
// layer since start; the input of load-balanced expert placement. Served as JSON over HTTP.
#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace moe::api {

// What capture's ExpertLoadCounter holds: snapshot() and rows_counted().
struct ExpertLoad {
  std::vector<std::vector<uint64_t>> counts;  // [moe layer][expert]
  uint64_t tokens = 0;                        // tokens counted (rows, each routed at every layer)
};

// {"num_moe_layers": L, "num_experts": E, "tokens": T, "counts": [[...], ...]}.
nlohmann::json expert_load_json(const ExpertLoad& load);

}  // namespace moe::api
