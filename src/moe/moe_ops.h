#pragma once
// The three expert-parallel ops of an MoE layer (prepare_moe_routing_tensors, then
// projection_to_intermediate for gate and up, then projection_to_output) and the all-reduce that joins
// the D devices' partial outputs. One device runs E/D local experts; device_expert_mapping[local] =
// global expert id.
// All tensors are row-major and flattened; shapes are given in brackets.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/weight.h"

namespace moe {

// routed_tokens padding: the slot holds no token.
inline constexpr uint32_t kNoRoutedToken = 0xFFFFFFFFu;
// token_idx_map padding: the slot holds no token.
inline constexpr int32_t kNoTopKPosition = -1;

// Which tokens each local expert processes, in ascending token order (op 1's output).
struct MoeRoutingTensors {
  int64_t num_tokens = 0;                   // T
  std::vector<int32_t> num_routed_tokens;   // [E/D, 1]: how many slots of each expert's row are used
  std::vector<uint32_t> routed_tokens;      // [E/D, T]: token index of slot j, kNoRoutedToken past the count
  std::vector<float> routed_token_weights;  // [E/D, T]: router weight of slot j, 0.0 past the count
  // [E/D, T]: the top-k position k of slot j, i.e. selected_experts[routed_tokens[e,j], k] is
  // this device's expert e; kNoTopKPosition past the count. projection_to_output uses (token, k)
  // to add every token's contributions in k order, whichever device or local index holds them.
  std::vector<int32_t> token_idx_map;

  int num_local_experts() const { return static_cast<int>(num_routed_tokens.size()); }
};

// Op 1: inverts the router's [T, K] choice into per-local-expert token lists. selected_experts
// holds global ids in [0, E); experts not on this device are skipped. out is overwritten.
void prepare_moe_routing_tensors(const int32_t* selected_experts, const float* routing_weights, int64_t num_tokens,
                                 int top_k, std::span<const int32_t> device_expert_mapping, int num_experts,
                                 MoeRoutingTensors& out);

// Op 2: out[e, j, :] = hidden[routed_tokens[e, j], :] · W[e]ᵀ for j < num_routed_tokens[e], and zero
// for the rows past the count. hidden is [T, H]; local_weights[e] is [H', H] (torch layout); out is
// resized to [E/D, T, H']. Used for the gate and the up projection.
void projection_to_intermediate(const float* hidden, int64_t num_tokens, std::span<const uint32_t> routed_tokens,
                                std::span<const int32_t> num_routed_tokens,
                                std::span<const WeightView> local_weights, std::vector<float>& out);

// Between ops 2 and 3: gate[e, j, :] = silu(gate[e, j, :]) * up[e, j, :] for the used rows only
// (the zero rows past each count stay zero). Both buffers are [E/D, T, H'].
void silu_and_multiply_routed(std::vector<float>& gate, const std::vector<float>& up,
                              std::span<const int32_t> num_routed_tokens, int64_t num_tokens);

// Op 3: out[t, :] = Σ over this device's slots (e, j) holding token t of
// routed_token_weights[e, j] · (act[e, j, :] · W_down[e]ᵀ), the local sum over the expert axis,
// added in top-k order k = 0..K-1. act is [E/D, T, H']; local_down[e] is [H, H'] (torch layout);
// out is [T, H] and overwritten (zero for tokens with no expert on this device).
void projection_to_output(const float* act, std::span<const int32_t> token_idx_map,
                          std::span<const uint32_t> routed_tokens, std::span<const int32_t> num_routed_tokens,
                          std::span<const float> routed_token_weights, std::span<const WeightView> local_down,
                          int64_t num_tokens, int top_k, float* out);

// The all-reduce over D devices: afterwards every buffer holds the element-wise sum of all of them,
// added in device order. In-process stand-in with a communicator's in-place contract.
void all_reduce_sum(std::span<float* const> device_buffers, int64_t count);

}  // namespace moe
