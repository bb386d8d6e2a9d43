#pragma once
// DeepSeek-V3's and GLM-4.5's router ("noaux_tc") on the device, as moe/grouped_sigmoid_router.h
// computes it on the CPU: sigmoid scores, the correction bias added for choosing only, the groups
// ranked by the sum of their two best biased scores, the top-k of the kept groups' experts by biased
// score (ties: lower id), weights = the chosen experts' unbiased scores, divided by their sum + 1e-20
// when normalising, times the scaling factor.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace moe::cuda {

struct GroupedSigmoidRouting {
  const float* correction_bias;  // [E] on the device
  int num_groups;
  int kept_groups;
  bool normalize;
  float scaling_factor;
};

// A moe::Error unless the kernel routes num_experts experts in `rule`'s groups: at most 512 experts
// and 32 groups (a warp's registers and lanes).
void check_grouped_sigmoid_shape(int num_experts, int top_k, const GroupedSigmoidRouting& rule);

// Routes tokens from logits [T, E] (the router's linear) into ids and weights [T, K], and into the
// capture's rows when given (capture_ids / capture_weights, either may be null), as route_top_k does
// for the softmax router.
void route_grouped_sigmoid(const float* logits, int64_t tokens, int num_experts, int top_k,
                           const GroupedSigmoidRouting& rule, int32_t* ids, float* weights, int16_t* capture_ids,
                           float* capture_weights, cudaStream_t stream);

}  // namespace moe::cuda
