// The router's softmax and top-k, and the grouping of routed (token, k) pairs by expert that lets
// every expert run as GEMMs over its own tokens, then the weighted sum back per token.
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace moe::cuda {
namespace {

// One thread per token, in moe/routing.cpp's order of operations: the softmax sums in expert order,
// the k picks are strictly descending in (probability, then lower id first), the kept weights are
// summed in rank order and divided (not multiplied by a reciprocal).
__global__ void route_kernel(float* logits, int64_t tokens, int num_experts, int top_k, bool normalize, int32_t* ids,
                             float* weights, int16_t* capture_ids, float* capture_weights) {
  MOE_GRID_STRIDE(t, tokens) {
    float* probs = logits + t * num_experts;
    float max_logit = probs[0];
    for (int e = 1; e < num_experts; ++e) max_logit = fmaxf(max_logit, probs[e]);
    float sum = 0.0f;
    for (int e = 0; e < num_experts; ++e) {
      probs[e] = expf(probs[e] - max_logit);
      sum += probs[e];
    }
    for (int e = 0; e < num_experts; ++e) probs[e] /= sum;
    // Pick j is the largest expert ranked below pick j - 1, so nothing needs marking as taken.
    float previous = INFINITY, kept = 0.0f;
    int previous_id = -1;
    for (int j = 0; j < top_k; ++j) {
      int best = -1;
      float best_prob = 0.0f;
      for (int e = 0; e < num_experts; ++e) {
        const float p = probs[e];
        const bool ranked_below = p < previous || (p == previous && e > previous_id);
        if (ranked_below && (best < 0 || p > best_prob)) {
          best = e;
          best_prob = p;
        }
      }
      ids[t * top_k + j] = best;
      weights[t * top_k + j] = best_prob;
      kept += best_prob;
      previous = best_prob;
      previous_id = best;
    }
    if (normalize)
      for (int j = 0; j < top_k; ++j) weights[t * top_k + j] /= kept;
    if (capture_ids)
      for (int j = 0; j < top_k; ++j) capture_ids[t * top_k + j] = static_cast<int16_t>(ids[t * top_k + j]);
    if (capture_weights)
      for (int j = 0; j < top_k; ++j) capture_weights[t * top_k + j] = weights[t * top_k + j];
  }
}

__global__ void count_kernel(const int32_t* ids, int64_t pairs, int32_t* counts) {
  MOE_GRID_STRIDE(p, pairs) atomicAdd(&counts[ids[p]], 1);
}

// offsets[1..E] hold the counts on entry; a single thread turns them into starts (E is small).
__global__ void scan_kernel(int32_t* offsets, int num_experts, int32_t* cursor) {
  for (int e = 0; e < num_experts; ++e) {
    offsets[e + 1] += offsets[e];
    cursor[e] = offsets[e];
  }
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

__global__ void combine_kernel(const float* expert_out, const int32_t* slot_of_pair, const float* weights,
                               int64_t tokens, int top_k, int64_t width, float* out) {
  MOE_GRID_STRIDE(i, tokens * width) {
    const int64_t t = i / width, c = i % width;
    float acc = 0.0f;
    for (int k = 0; k < top_k; ++k) {
      const int64_t pair = t * top_k + k;
      acc += weights[pair] * expert_out[static_cast<int64_t>(slot_of_pair[pair]) * width + c];
    }
    out[i] = acc;
  }
}

}  // namespace

void route_top_k(float* logits, int64_t tokens, int num_experts, int top_k, bool normalize, int32_t* ids,
                 float* weights, int16_t* capture_ids, float* capture_weights, cudaStream_t stream) {
  if (tokens == 0) return;
  route_kernel<<<blocks_for(tokens), kThreads, 0, stream>>>(logits, tokens, num_experts, top_k, normalize, ids,
                                                            weights, capture_ids, capture_weights);
  check_launch("route_top_k");
}

void group_by_expert(const int32_t* ids, int64_t pairs, int num_experts, int32_t* offsets, int32_t* cursor,
                     int32_t* order, int32_t* slot_of_pair, cudaStream_t stream) {
  check(cudaMemsetAsync(offsets, 0, sizeof(int32_t) * (num_experts + 1), stream), "cudaMemsetAsync (expert counts)");
  if (pairs > 0) {
    count_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(ids, pairs, offsets + 1);
    check_launch("group_by_expert (count)");
  }
  scan_kernel<<<1, 1, 0, stream>>>(offsets, num_experts, cursor);
  check_launch("group_by_expert (scan)");
  if (pairs > 0) {
    fill_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(ids, pairs, cursor, order, slot_of_pair);
    check_launch("group_by_expert (fill)");
  }
}

void combine_experts(const float* expert_out, const int32_t* slot_of_pair, const float* weights, int64_t tokens,
                     int top_k, int64_t width, float* out, cudaStream_t stream) {
  if (tokens == 0) return;
  combine_kernel<<<blocks_for(tokens * width), kThreads, 0, stream>>>(expert_out, slot_of_pair, weights, tokens,
                                                                      top_k, width, out);
  check_launch("combine_experts");
}

}  // namespace moe::cuda
