// The router's softmax and top-k, and the grouping of routed (token, k) pairs by expert that lets
// every expert run as GEMMs over its own tokens, then the weighted sum back per token.
#include <string>

#include "common/error.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/router_softmax.cuh"

namespace moe::cuda {
namespace {

// One warp per token: token_softmax, then each of the k picks as a warp arg-max over the experts
// ranked below the previous pick, strictly descending in (probability, then lower id first) as
// moe/moe_runner.cpp orders them; a token the expert limit confines picks among the pool's experts
// only. The kept weights are summed in rank order and divided (not multiplied by a reciprocal).
__device__ void route_token(const float* logits, int64_t t, int num_experts, int top_k, bool normalize,
                            const ExpertLimitRef& limit, int32_t* ids, float* weights, int16_t* capture_ids,
                            float* capture_weights) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  float probs[kExpertsPerLane];
  token_softmax(logits, t, num_experts, probs);
  const int32_t* pool = limit.limited_tokens && limit.limited_tokens[t] ? limit.in_pool : nullptr;
  bool candidate[kExpertsPerLane];
#pragma unroll
  for (int j = 0; j < kExpertsPerLane; ++j) {
    const int e = lane + j * kWarpSize;
    candidate[j] = e < num_experts && (!pool || pool[e]);
  }

  const WarpPick pick = warp_top_k(probs, probs, candidate, top_k);
  if (lane >= top_k) return;
  const int64_t pair = t * top_k + lane;
  const float weight = normalize ? pick.carry / pick.carried_sum : pick.carry;
  ids[pair] = pick.id;
  weights[pair] = weight;
  if (capture_ids) capture_ids[pair] = static_cast<int16_t>(pick.id);
  if (capture_weights) capture_weights[pair] = weight;
}

__global__ void route_kernel(const float* logits, int64_t tokens, int num_experts, int top_k, bool normalize,
                             ExpertLimitRef limit, int32_t* ids, float* weights, int16_t* capture_ids,
                             float* capture_weights) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  if (t < tokens)
    route_token(logits, t, num_experts, top_k, normalize, limit, ids, weights, capture_ids, capture_weights);
}

__global__ void count_kernel(const int32_t* ids, int64_t pairs, int32_t* counts) {
  MOE_GRID_STRIDE(p, pairs) atomicAdd(&counts[ids[p]], 1);
}

// offsets[1..E] hold the counts on entry; one warp turns them into starts: each lane reads its run
// of consecutive experts' counts (all reads before any write), a warp scan gives every run its
// start, and each lane writes its run's starts. At most kExpertsPerLane experts a lane. The experts
// with rows are listed in id order in active[0 ..], the rest of active[0 .. E) is -1: the grouped
// expert kernels launch a block row per listed expert, not one per expert.
__device__ void scan_counts(int32_t* offsets, int num_experts, int32_t* cursor, int32_t* active) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int per_lane = (num_experts + kWarpSize - 1) / kWarpSize;
  const int first = lane * per_lane;
  int32_t counts[kExpertsPerLane];
  int32_t run = 0, run_active = 0;
#pragma unroll
  for (int i = 0; i < kExpertsPerLane; ++i) {
    const int e = first + i;
    counts[i] = i < per_lane && e < num_experts ? offsets[e + 1] : 0;
    run += counts[i];
    run_active += counts[i] > 0 ? 1 : 0;
  }
  int32_t inclusive = run, inclusive_active = run_active;
  for (int offset = 1; offset < kWarpSize; offset *= 2) {
    const int32_t before = __shfl_up_sync(kFullWarp, inclusive, offset);
    const int32_t before_active = __shfl_up_sync(kFullWarp, inclusive_active, offset);
    if (lane >= offset) {
      inclusive += before;
      inclusive_active += before_active;
    }
  }
  int32_t start = inclusive - run, rank = inclusive_active - run_active;
#pragma unroll
  for (int i = 0; i < kExpertsPerLane; ++i) {
    const int e = first + i;
    if (i < per_lane && e < num_experts) {
      offsets[e] = start;
      cursor[e] = start;
      start += counts[i];
      if (counts[i] > 0) active[rank++] = e;
    }
  }
  const int32_t total_active = __shfl_sync(kFullWarp, inclusive_active, kWarpSize - 1);
  for (int j = total_active + lane; j < num_experts; j += kWarpSize) active[j] = -1;
  if (lane == kWarpSize - 1) offsets[num_experts] = inclusive;
}

__global__ void scan_kernel(int32_t* offsets, int num_experts, int32_t* cursor, int32_t* active) {
  scan_counts(offsets, num_experts, cursor, active);
}

// The order of pairs within an expert's slots varies from run to run, but no result depends on it:
// each row of an expert's GEMMs depends on its own input row only, and combine_kernel adds in
// top-k order.
__global__ void fill_kernel(const int32_t* ids, int64_t pairs, int32_t* cursor, int32_t* order,
                            int32_t* slot_of_pair) {
  MOE_GRID_STRIDE(p, pairs) {
    const int32_t slot = atomicAdd(&cursor[ids[p]], 1);
    order[slot] = static_cast<int32_t>(p);
    slot_of_pair[p] = slot;
  }
}

// route_kernel, then count, scan and fill, in one block: a decode step's routing is a few dozen
// tokens, and five launches of it cost more than the work. The counts and cursors live in shared
// memory (offsets[0 .. E] then cursor[0 .. E)); only the results go to device memory.
// 512 threads leave each up to 128 registers (route_token keeps a lane's probabilities in registers).
constexpr int kRouteAndGroupThreads = 512;

__global__ void __launch_bounds__(kRouteAndGroupThreads)
    route_and_group_kernel(const float* logits, int64_t tokens, int num_experts, int top_k, bool normalize,
                           ExpertLimitRef limit, int32_t* ids, float* weights, int16_t* capture_ids,
                           float* capture_weights, int32_t* offsets, int32_t* order, int32_t* slot_of_pair,
                           int32_t* active) {
  extern __shared__ int32_t counts[];
  int32_t* cursor = counts + num_experts + 1;
  const int warp = static_cast<int>(threadIdx.x / kWarpSize), warps = static_cast<int>(blockDim.x / kWarpSize);
  const int64_t pairs = tokens * top_k;
  for (int e = static_cast<int>(threadIdx.x); e <= num_experts; e += static_cast<int>(blockDim.x)) counts[e] = 0;
  for (int64_t t = warp; t < tokens; t += warps)
    route_token(logits, t, num_experts, top_k, normalize, limit, ids, weights, capture_ids, capture_weights);
  __syncthreads();  // the block's ids and zeroed counts are visible to all of it from here
  for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) atomicAdd(&counts[ids[p] + 1], 1);
  __syncthreads();
  if (warp == 0) scan_counts(counts, num_experts, cursor, active);
  __syncthreads();
  for (int e = static_cast<int>(threadIdx.x); e <= num_experts; e += static_cast<int>(blockDim.x)) offsets[e] = counts[e];
  for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const int32_t slot = atomicAdd(&cursor[ids[p]], 1);
    order[slot] = static_cast<int32_t>(p);
    slot_of_pair[p] = slot;
  }
}

// route_kernel's warps spread over many blocks, with the grouping in the same launch: each block
// counts its own tokens' pairs into offsets[1 .. E] (zeroed by the launcher, with the ticket at
// offsets[E + 1]), and the last block to take a ticket scans the counts and places every pair. Each
// thread fences its writes before its block takes the ticket, so the last block sees every block's
// ids and counts (read past the L1 cache).
__global__ void route_group_spread_kernel(const float* logits, int64_t tokens, int num_experts, int top_k,
                                          bool normalize, ExpertLimitRef limit, int32_t* ids, float* weights,
                                          int16_t* capture_ids, float* capture_weights, int32_t* offsets,
                                          int32_t* cursor, int32_t* order, int32_t* slot_of_pair, int32_t* active) {
  const int64_t warps = blockDim.x / kWarpSize, first = static_cast<int64_t>(blockIdx.x) * warps;
  const int64_t t = first + threadIdx.x / kWarpSize;
  if (t < tokens)
    route_token(logits, t, num_experts, top_k, normalize, limit, ids, weights, capture_ids, capture_weights);
  __syncthreads();
  const int64_t pairs = tokens * top_k, block_end = min(pairs, (first + warps) * top_k);
  for (int64_t p = first * top_k + threadIdx.x; p < block_end; p += blockDim.x) atomicAdd(&offsets[ids[p] + 1], 1);
  __threadfence();
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) last = atomicAdd(&offsets[num_experts + 1], 1) == static_cast<int32_t>(gridDim.x) - 1;
  __syncthreads();
  if (!last) return;
  if (threadIdx.x < kWarpSize) scan_counts(offsets, num_experts, cursor, active);
  __syncthreads();
  for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const int32_t slot = atomicAdd(&cursor[__ldcg(&ids[p])], 1);
    order[slot] = static_cast<int32_t>(p);
    slot_of_pair[p] = slot;
  }
}

// kSharded: only the pairs whose expert `owner` gives to `shard` (ids and owner unread otherwise).
template <bool kSharded>
__global__ void combine_kernel(const float* expert_out, const int32_t* slot_of_pair, const float* weights,
                               const int32_t* ids, const int32_t* owner, int shard, int64_t tokens, int top_k,
                               int64_t width, float* out) {
  MOE_GRID_STRIDE(i, tokens * width) {
    const int64_t t = i / width, c = i % width;
    float acc = 0.0f;
    for (int k = 0; k < top_k; ++k) {
      const int64_t pair = t * top_k + k;
      if constexpr (kSharded)
        if (owner[ids[pair]] != shard) continue;
      acc += weights[pair] * expert_out[static_cast<int64_t>(slot_of_pair[pair]) * width + c];
    }
    out[i] = acc;
  }
}

// Routing keeps a lane per pick.
void check_routing_shape(int num_experts, int top_k) {
  check_expert_count(num_experts);
  if (top_k < 1 || top_k > kWarpSize)
    throw Error("CUDA routing supports 1 to " + std::to_string(kWarpSize) + " experts per token, not " +
                std::to_string(top_k));
}

}  // namespace

void route_top_k(const float* logits, int64_t tokens, int num_experts, int top_k, bool normalize,
                 const ExpertLimitRef& limit, int32_t* ids, float* weights, int16_t* capture_ids,
                 float* capture_weights, cudaStream_t stream) {
  if (tokens == 0) return;
  check_routing_shape(num_experts, top_k);
  constexpr int64_t kTokensPerBlock = kThreads / kWarpSize;
  const auto blocks = static_cast<unsigned>((tokens + kTokensPerBlock - 1) / kTokensPerBlock);
  route_kernel<<<blocks, kThreads, 0, stream>>>(logits, tokens, num_experts, top_k, normalize, limit, ids, weights,
                                                capture_ids, capture_weights);
  check_launch("route_top_k");
}

void route_and_group(const float* logits, int64_t tokens, int num_experts, int top_k, bool normalize,
                     const ExpertLimitRef& limit, int32_t* ids, float* weights, int16_t* capture_ids,
                     float* capture_weights, int32_t* offsets, int32_t* order, int32_t* slot_of_pair, int32_t* active,
                     cudaStream_t stream) {
  check_routing_shape(num_experts, top_k);
  const size_t shared_bytes = sizeof(int32_t) * (2 * static_cast<size_t>(num_experts) + 1);
  route_and_group_kernel<<<1, kRouteAndGroupThreads, shared_bytes, stream>>>(
      logits, tokens, num_experts, top_k, normalize, limit, ids, weights, capture_ids, capture_weights, offsets, order,
      slot_of_pair, active);
  check_launch("route_and_group");
}

void route_and_group_spread(const float* logits, int64_t tokens, int num_experts, int top_k, bool normalize,
                            const ExpertLimitRef& limit, int32_t* ids, float* weights, int16_t* capture_ids,
                            float* capture_weights, int32_t* offsets, int32_t* cursor, int32_t* order,
                            int32_t* slot_of_pair, int32_t* active, cudaStream_t stream) {
  if (tokens == 0) return;
  check_routing_shape(num_experts, top_k);
  check(cudaMemsetAsync(offsets, 0, sizeof(int32_t) * (num_experts + 2), stream), "cudaMemsetAsync (expert counts)");
  constexpr int64_t kTokensPerBlock = kThreads / kWarpSize;
  const auto blocks = static_cast<unsigned>((tokens + kTokensPerBlock - 1) / kTokensPerBlock);
  route_group_spread_kernel<<<blocks, kThreads, 0, stream>>>(logits, tokens, num_experts, top_k, normalize, limit, ids,
                                                             weights, capture_ids, capture_weights, offsets, cursor,
                                                             order, slot_of_pair, active);
  check_launch("route_and_group_spread");
}

void group_by_expert(const int32_t* ids, int64_t pairs, int num_experts, int32_t* offsets, int32_t* cursor,
                     int32_t* order, int32_t* slot_of_pair, int32_t* active, cudaStream_t stream) {
  check_expert_count(num_experts);
  check(cudaMemsetAsync(offsets, 0, sizeof(int32_t) * (num_experts + 1), stream), "cudaMemsetAsync (expert counts)");
  if (pairs > 0) {
    count_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(ids, pairs, offsets + 1);
    check_launch("group_by_expert (count)");
  }
  scan_kernel<<<1, kWarpSize, 0, stream>>>(offsets, num_experts, cursor, active);
  check_launch("group_by_expert (scan)");
  if (pairs > 0) {
    fill_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(ids, pairs, cursor, order, slot_of_pair);
    check_launch("group_by_expert (fill)");
  }
}

void combine_experts(const float* expert_out, const int32_t* slot_of_pair, const float* weights, int64_t tokens,
                     int top_k, int64_t width, float* out, cudaStream_t stream) {
  if (tokens == 0) return;
  combine_kernel<false><<<blocks_for(tokens * width), kThreads, 0, stream>>>(
      expert_out, slot_of_pair, weights, nullptr, nullptr, 0, tokens, top_k, width, out);
  check_launch("combine_experts");
}

void combine_shard_experts(const float* expert_out, const int32_t* slot_of_pair, const float* weights,
                           const int32_t* ids, const int32_t* owner, int shard, int64_t tokens, int top_k,
                           int64_t width, float* out, cudaStream_t stream) {
  if (tokens == 0) return;
  combine_kernel<true><<<blocks_for(tokens * width), kThreads, 0, stream>>>(
      expert_out, slot_of_pair, weights, ids, owner, shard, tokens, top_k, width, out);
  check_launch("combine_shard_experts");
}

}  // namespace moe::cuda
