#pragma once
// The routing of one forward step, copied off the device: row t belongs to the step's token t.
#include <cstdint>
#include <vector>

namespace moe {

struct StagedRouting {
  uint64_t step = 0;
  int64_t num_tokens = 0;
  int num_moe_layers = 0;
  int top_k = 0;
  std::vector<int16_t> ids;     // [num_tokens, num_moe_layers, top_k], token-major for the host cache
  std::vector<float> weights;   // same shape, empty unless weights were captured
};

}  // namespace moe
