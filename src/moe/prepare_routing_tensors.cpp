#include <string>

#include "common/error.h"
#include "moe/moe_ops.h"

namespace moe {
namespace {

// global expert id → local index on this device, or -1 for experts that live elsewhere.
std::vector<int32_t> global_to_local(std::span<const int32_t> device_expert_mapping, int num_experts) {
  std::vector<int32_t> local_of(static_cast<size_t>(num_experts), -1);
  for (size_t local = 0; local < device_expert_mapping.size(); ++local) {
    const int32_t global = device_expert_mapping[local];
    if (global < 0 || global >= num_experts)
      throw Error("device_expert_mapping[" + std::to_string(local) + "] = " + std::to_string(global) +
                  " is not an expert id in [0, " + std::to_string(num_experts) + ")");
    if (local_of[global] != -1)
      throw Error("device_expert_mapping lists expert " + std::to_string(global) + " twice");
    local_of[global] = static_cast<int32_t>(local);
  }
  return local_of;
}

}  // namespace

void prepare_moe_routing_tensors(const int32_t* selected_experts, const float* routing_weights, int64_t num_tokens,
                                 int top_k, std::span<const int32_t> device_expert_mapping, int num_experts,
                                 MoeRoutingTensors& out) {
  const std::vector<int32_t> local_of = global_to_local(device_expert_mapping, num_experts);
  const size_t num_local = device_expert_mapping.size();
  const size_t slots = num_local * static_cast<size_t>(num_tokens);
  out.num_tokens = num_tokens;
  out.num_routed_tokens.assign(num_local, 0);
  out.routed_tokens.assign(slots, kNoRoutedToken);
  out.routed_token_weights.assign(slots, 0.0f);
  out.token_idx_map.assign(slots, kNoTopKPosition);

  // Walking tokens in ascending order fills each expert's row in ascending token order.
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int k = 0; k < top_k; ++k) {
      const int32_t global = selected_experts[t * top_k + k];
      if (global < 0 || global >= num_experts)
        throw Error("selected_experts[" + std::to_string(t) + ", " + std::to_string(k) + "] = " +
                    std::to_string(global) + " is not an expert id in [0, " + std::to_string(num_experts) + ")");
      const int32_t local = local_of[global];
      if (local < 0) continue;
      const size_t row = static_cast<size_t>(local) * num_tokens;
      int32_t& count = out.num_routed_tokens[local];
      // A repeated expert in one token's top-k would overflow the expert's row of T slots.
      if (count > 0 && out.routed_tokens[row + count - 1] == static_cast<uint32_t>(t))
        throw Error("selected_experts row " + std::to_string(t) + " lists expert " + std::to_string(global) +
                    " twice");
      const size_t slot = row + count++;
      out.routed_tokens[slot] = static_cast<uint32_t>(t);
      out.routed_token_weights[slot] = routing_weights[t * top_k + k];
      out.token_idx_map[slot] = k;
    }
  }
}

}  // namespace moe
