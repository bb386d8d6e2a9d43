#include "capture/copy_engine.h"

#include <cstddef>

namespace moe {

int64_t RoutingBufferShape::bytes() const {
  return elements() * static_cast<int64_t>(sizeof(int16_t) + (with_weights ? sizeof(float) : 0));
}

StagedRouting stage_token_major(uint64_t step, int64_t num_tokens, const RoutingBufferShape& shape,
                                const int16_t* ids, const float* weights, int64_t layer_stride) {
  const int L = shape.num_moe_layers, K = shape.top_k;
  StagedRouting out{step, num_tokens, L, K, {}, {}};
  out.ids.resize(static_cast<size_t>(num_tokens * L * K));
  if (weights) out.weights.resize(out.ids.size());
  for (int l = 0; l < L; ++l) {
    const int64_t from = l * layer_stride;
    for (int64_t t = 0; t < num_tokens; ++t)
      for (int k = 0; k < K; ++k) out.ids[(t * L + l) * K + k] = ids[from + t * K + k];
    if (!weights) continue;
    for (int64_t t = 0; t < num_tokens; ++t)
      for (int k = 0; k < K; ++k) out.weights[(t * L + l) * K + k] = weights[from + t * K + k];
  }
  return out;
}

}  // namespace moe
