#include "cuda/grouped_sigmoid_routing.h"

#include <string>

#include "common/error.h"
#include "cuda/launch.cuh"
#include "cuda/router_softmax.cuh"
#include "cuda/weight_access.cuh"

namespace moe::cuda {
namespace {

constexpr int kMaxGroups = kWarpSize;
constexpr int kTokensPerBlock = kThreads / kWarpSize;

// One warp per token. Lane j holds experts j, j + 32, ... (scores and biased scores in registers);
// the biased scores also go to shared memory, where lane g scans group g's experts in id order for
// its two best (the CPU's loop), and every lane ranks its group against the others.
__global__ void route_grouped_sigmoid_kernel(const float* logits, int64_t tokens, int num_experts, int top_k,
                                             GroupedSigmoidRouting rule, int32_t* ids, float* weights,
                                             int16_t* capture_ids, float* capture_weights) {
  __shared__ float biased_rows[kTokensPerBlock][kExpertsPerLane * kWarpSize];
  __shared__ float group_scores[kTokensPerBlock][kMaxGroups];
  const int warp = static_cast<int>(threadIdx.x / kWarpSize), lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kTokensPerBlock + warp;
  if (t >= tokens) return;  // whole warps leave together: no block-wide barrier below
  float* biased = biased_rows[warp];
  const float* row = logits + t * num_experts;
  float score[kExpertsPerLane], choice[kExpertsPerLane];
#pragma unroll
  for (int j = 0; j < kExpertsPerLane; ++j) {
    const int e = lane + j * kWarpSize;
    score[j] = e < num_experts ? sigmoid(row[e]) : 0.0f;
    choice[j] = e < num_experts ? score[j] + rule.correction_bias[e] : -INFINITY;
    if (e < num_experts) biased[e] = choice[j];
  }
  const int group_size = num_experts / rule.num_groups;
  if (rule.kept_groups < rule.num_groups) {
    __syncwarp();
    if (lane < rule.num_groups) {
      float best = -INFINITY, second = -INFINITY;
      for (int i = 0; i < group_size; ++i) {
        const float v = biased[lane * group_size + i];
        if (v > best) {
          second = best;
          best = v;
        } else if (v > second) {
          second = v;
        }
      }
      group_scores[warp][lane] = best + second;
    }
    __syncwarp();
    // Group g is kept when fewer than kept_groups groups rank above it (higher sum, or equal and lower id).
#pragma unroll
    for (int j = 0; j < kExpertsPerLane; ++j) {
      const int e = lane + j * kWarpSize;
      if (e >= num_experts) continue;
      const int g = e / group_size;
      const float mine = group_scores[warp][g];
      int above = 0;
      for (int h = 0; h < rule.num_groups; ++h) {
        const float other = group_scores[warp][h];
        above += other > mine || (other == mine && h < g) ? 1 : 0;
      }
      if (above >= rule.kept_groups) choice[j] = -INFINITY;
    }
  }

  // The top-k by biased score; excluded experts (-inf) are never candidates.
  bool candidate[kExpertsPerLane];
#pragma unroll
  for (int j = 0; j < kExpertsPerLane; ++j) candidate[j] = lane + j * kWarpSize < num_experts && choice[j] != -INFINITY;
  const WarpPick pick = warp_top_k(choice, score, candidate, top_k);
  if (lane >= top_k) return;
  // Divided (not multiplied by a reciprocal), then scaled, as the CPU's router rounds.
  const float divisor = rule.normalize ? pick.carried_sum + 1e-20f : 1.0f;
  const float weight = pick.carry / divisor * rule.scaling_factor;
  const int64_t pair = t * top_k + lane;
  ids[pair] = pick.id;
  weights[pair] = weight;
  if (capture_ids) capture_ids[pair] = static_cast<int16_t>(pick.id);
  if (capture_weights) capture_weights[pair] = weight;
}

}  // namespace

void check_grouped_sigmoid_shape(int num_experts, int top_k, const GroupedSigmoidRouting& rule) {
  check_expert_count(num_experts);
  if (top_k < 1 || top_k > kWarpSize)
    throw Error("CUDA routing supports 1 to " + std::to_string(kWarpSize) + " experts per token, not " +
                std::to_string(top_k));
  if (rule.num_groups < 1 || rule.num_groups > kMaxGroups || num_experts % rule.num_groups != 0)
    throw Error("CUDA grouped sigmoid routing supports 1 to " + std::to_string(kMaxGroups) +
                " groups dividing the experts, not " + std::to_string(rule.num_groups) + " of " +
                std::to_string(num_experts));
}

void route_grouped_sigmoid(const float* logits, int64_t tokens, int num_experts, int top_k,
                           const GroupedSigmoidRouting& rule, int32_t* ids, float* weights, int16_t* capture_ids,
                           float* capture_weights, cudaStream_t stream) {
  if (tokens == 0) return;
  check_grouped_sigmoid_shape(num_experts, top_k, rule);
  const auto blocks = static_cast<unsigned>((tokens + kTokensPerBlock - 1) / kTokensPerBlock);
  route_grouped_sigmoid_kernel<<<blocks, kThreads, 0, stream>>>(logits, tokens, num_experts, top_k, rule, ids, weights,
                                                               capture_ids, capture_weights);
  check_launch("route_grouped_sigmoid");
}

}  // namespace moe::cuda
