#pragma once
// The router's softmax as the routing kernels compute it, a warp per token: routing.cu's top-k and
// expert_pool.cu's pool weigh exactly the same probabilities; and the warp's top-k pick that the
// softmax and the grouped sigmoid routers share.
#include <cstdint>
#include <string>

#include "common/error.h"

namespace moe::cuda {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kExpertsPerLane = 16;  // up to 512 experts, held in registers

// The router's softmax of token t over a warp, each lane holding experts lane, lane + 32, ... in
// probs (0 past num_experts): the max and sum by warp reductions.
__device__ inline void token_softmax(const float* logits, int64_t t, int num_experts, float (&probs)[kExpertsPerLane]) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  const float* row = logits + t * num_experts;
  float max_logit = -INFINITY;
#pragma unroll
  for (int j = 0; j < kExpertsPerLane; ++j) {
    const int e = lane + j * kWarpSize;
    probs[j] = e < num_experts ? row[e] : -INFINITY;
    max_logit = fmaxf(max_logit, probs[j]);
  }
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    max_logit = fmaxf(max_logit, __shfl_xor_sync(kFullWarp, max_logit, offset));
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kExpertsPerLane; ++j) {
    const bool present = lane + j * kWarpSize < num_experts;
    probs[j] = present ? expf(probs[j] - max_logit) : 0.0f;
    sum += probs[j];
  }
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullWarp, sum, offset);
#pragma unroll
  for (int j = 0; j < kExpertsPerLane; ++j) probs[j] /= sum;
}

// A warp's top-k, each lane holding experts lane, lane + 32, ... (kExpertsPerLane of them): pick k is
// the candidate with the largest `rank` ranked below pick k - 1 (descending, ties: lower id first),
// so nothing needs marking as taken. Lane k < top_k gets pick k's id and `carry` (the value its weight
// comes from); every lane gets the picks' carries summed in pick order. top_k <= 32.
struct WarpPick {
  int id;
  float carry;
  float carried_sum;
};
__device__ inline WarpPick warp_top_k(const float (&rank)[kExpertsPerLane], const float (&carry)[kExpertsPerLane],
                                      const bool (&candidate)[kExpertsPerLane], int top_k) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  float previous = INFINITY;
  int previous_id = -1;
  WarpPick mine{-1, 0.0f, 0.0f};
  for (int k = 0; k < top_k; ++k) {
    int best = -1;
    float best_rank = 0.0f, best_carry = 0.0f;
#pragma unroll
    for (int j = 0; j < kExpertsPerLane; ++j) {
      const int e = lane + j * kWarpSize;
      const float r = rank[j];
      const bool ranked_below = r < previous || (r == previous && e > previous_id);
      if (candidate[j] && ranked_below && (best < 0 || r > best_rank)) {
        best = e;
        best_rank = r;
        best_carry = carry[j];
      }
    }
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      const int other = __shfl_xor_sync(kFullWarp, best, offset);
      const float other_rank = __shfl_xor_sync(kFullWarp, best_rank, offset);
      const float other_carry = __shfl_xor_sync(kFullWarp, best_carry, offset);
      if (other >= 0 && (best < 0 || other_rank > best_rank || (other_rank == best_rank && other < best))) {
        best = other;
        best_rank = other_rank;
        best_carry = other_carry;
      }
    }
    if (lane == k) {
      mine.id = best;
      mine.carry = best_carry;
    }
    mine.carried_sum += best_carry;
    previous = best_rank;
    previous_id = best;
  }
  return mine;
}

// Routing, grouping and the pool keep a lane's run of experts in registers.
inline void check_expert_count(int num_experts) {
  if (num_experts > kExpertsPerLane * kWarpSize)
    throw Error("CUDA routing supports up to " + std::to_string(kExpertsPerLane * kWarpSize) + " experts, not " +
                std::to_string(num_experts));
}

}  // namespace moe::cuda
