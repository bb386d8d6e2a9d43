#pragma once
// The capturer's "device cache": (num_moe_layers, N, K) int16, N = the most tokens one forward holds,
// so MoE layer l writes its top-k ids into a contiguous (N, K) block right after selection. Two such
// buffers alternate between steps so that step n+1 can fill one while step n's copy reads the other.
#include <cstdint>
#include <vector>

namespace moe {

class DeviceRoutingBuffer {
 public:
  DeviceRoutingBuffer(int num_moe_layers, int64_t max_tokens, int top_k, bool with_weights);

  int num_moe_layers() const { return num_moe_layers_; }
  int64_t max_tokens() const { return max_tokens_; }
  int top_k() const { return top_k_; }
  bool with_weights() const { return !weights_.empty(); }
  int64_t bytes() const;

  // Layer `layer`'s rows 0..num_tokens-1 from the router's int32 ids (and float weights).
  void write(int layer, int64_t num_tokens, const int32_t* ids, const float* weights);
  const int16_t* layer_ids(int layer) const { return ids_.data() + layer * max_tokens_ * top_k_; }
  const float* layer_weights(int layer) const { return weights_.data() + layer * max_tokens_ * top_k_; }

 private:
  int num_moe_layers_;
  int64_t max_tokens_;
  int top_k_;
  std::vector<int16_t> ids_;    // [L, N, K]
  std::vector<float> weights_;  // [L, N, K] or empty
};

}  // namespace moe
