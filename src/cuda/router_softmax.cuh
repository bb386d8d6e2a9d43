#pragma once
// The router's softmax as the routing kernels compute it, a warp per token: routing.cu's top-k and
// expert_pool.cu's pool weigh exactly the same probabilities.
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

// Routing, grouping and the pool keep a lane's run of experts in registers.
inline void check_expert_count(int num_experts) {
  if (num_experts > kExpertsPerLane * kWarpSize)
    throw Error("CUDA routing supports up to " + std::to_string(kExpertsPerLane * kWarpSize) + " experts, not " +
                std::to_string(num_experts));
}

}  // namespace moe::cuda
