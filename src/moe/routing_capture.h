#pragma once
// Where the routed-experts capturer attaches: the MoE layer calls it right after top-k selection.
// A null pointer means nothing is attached and nothing is done.
#include <cstdint>

namespace moe {

class RoutingCapture {
 public:
  virtual ~RoutingCapture() = default;
  // ids/weights are [num_tokens, top_k], row t belonging to token t of the current forward batch.
  virtual void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids,
                          const float* weights) = 0;
};

}  // namespace moe
