#pragma once
// The routing rows a drafting model (STANDALONE's draft, NEXTN's next-token-prediction layer) returns
// for return_draft_routed_experts, kept apart from the target's capture.
#include <cstdint>
#include <utility>

#include "moe/messages.h"
#include "moe/routing_capture.h"

namespace moe {

// A draft's routing of one forward, straight into rows [T, layers, top_k] (the hook is called with its
// ids in host memory).
class RowsCollector final : public RoutingCapture {
 public:
  RowsCollector(int64_t num_tokens, int num_layers, int top_k) {
    rows_.num_layers = num_layers;
    rows_.top_k = top_k;
    rows_.expert_ids.assign(static_cast<size_t>(num_tokens * num_layers * top_k), -1);
  }
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float*) override {
    for (int64_t t = 0; t < num_tokens; ++t)
      for (int k = 0; k < top_k; ++k)
        rows_.expert_ids[static_cast<size_t>((t * rows_.num_layers + moe_layer) * top_k + k)] =
            static_cast<int16_t>(ids[t * top_k + k]);
  }
  msg::RoutingRows take() { return std::move(rows_); }

 private:
  msg::RoutingRows rows_;
};

}  // namespace moe
