#pragma once
// A routing capture that keeps every MoE layer's [T, K] ids of one forward in host memory (on the
// GPU, a capture that takes host rows).
#include <cstdint>
#include <set>
#include <vector>

#include "moe/routing_capture.h"

namespace moe::testing {

class RecordingCapture : public RoutingCapture {
 public:
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float*) override {
    if (static_cast<int>(layers.size()) <= moe_layer) layers.resize(moe_layer + 1);
    layers[moe_layer].assign(ids, ids + num_tokens * top_k);
    k = top_k;
  }
  // Ids of token t at every layer.
  std::vector<int32_t> row(int64_t t) const {
    std::vector<int32_t> out;
    for (const auto& l : layers) out.insert(out.end(), l.begin() + t * k, l.begin() + (t + 1) * k);
    return out;
  }
  // Distinct experts of tokens [first, first + count) at each layer.
  std::vector<size_t> distinct_experts(int64_t first, int64_t count) const {
    std::vector<size_t> out;
    for (const auto& layer : layers) {
      std::set<int32_t> ids(layer.begin() + first * k, layer.begin() + (first + count) * k);
      out.push_back(ids.size());
    }
    return out;
  }
  std::vector<std::vector<int32_t>> layers;
  int k = 0;
};

}  // namespace moe::testing
