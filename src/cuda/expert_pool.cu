// Expert limiting of a speculative verify pass (--max-tree-experts), as moe/moe_runner.cpp's
// expert_pool: the experts with the largest router probability summed over the limited tokens.
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/router_softmax.cuh"

namespace moe::cuda {
namespace {

constexpr int kPoolThreads = 512;

// One block, as a verify pass has a few dozen tokens. Its warps write each limited token's
// probabilities into `probs`; then thread e sums expert e's in double in token order (the CPU's
// sum, term for term) into shared memory, and an expert is in the pool when fewer than max_experts
// experts rank above it (larger mass, or equal mass and lower id).
__global__ void __launch_bounds__(kPoolThreads)
    expert_pool_kernel(const float* logits, int64_t tokens, int num_experts, int max_experts,
                       const int32_t* limited_tokens, float* probs, int32_t* in_pool) {
  extern __shared__ double mass[];
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int warp = static_cast<int>(threadIdx.x / kWarpSize), warps = static_cast<int>(blockDim.x / kWarpSize);
  for (int64_t t = warp; t < tokens; t += warps) {
    if (!limited_tokens[t]) continue;
    float p[kExpertsPerLane];
    token_softmax(logits, t, num_experts, p);
#pragma unroll
    for (int j = 0; j < kExpertsPerLane; ++j) {
      const int e = lane + j * kWarpSize;
      if (e < num_experts) probs[t * num_experts + e] = p[j];
    }
  }
  __syncthreads();  // the block's writes to probs are visible to all of it from here
  for (int e = static_cast<int>(threadIdx.x); e < num_experts; e += static_cast<int>(blockDim.x)) {
    double sum = 0.0;
    for (int64_t t = 0; t < tokens; ++t)
      if (limited_tokens[t]) sum += static_cast<double>(probs[t * num_experts + e]);
    mass[e] = sum;
  }
  __syncthreads();
  for (int e = static_cast<int>(threadIdx.x); e < num_experts; e += static_cast<int>(blockDim.x)) {
    int above = 0;
    for (int f = 0; f < num_experts; ++f) above += mass[f] > mass[e] || (mass[f] == mass[e] && f < e) ? 1 : 0;
    in_pool[e] = above < max_experts ? 1 : 0;
  }
}

}  // namespace

void expert_pool(const float* logits, int64_t tokens, int num_experts, int max_experts, const int32_t* limited_tokens,
                 float* probs, int32_t* in_pool, cudaStream_t stream) {
  check_expert_count(num_experts);
  expert_pool_kernel<<<1, kPoolThreads, sizeof(double) * static_cast<size_t>(num_experts), stream>>>(
      logits, tokens, num_experts, max_experts, limited_tokens, probs, in_pool);
  check_launch("expert_pool");
}

}  // namespace moe::cuda
