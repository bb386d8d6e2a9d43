#include "capture/device_routing_buffer.h"

#include "common/error.h"

namespace moe {

DeviceRoutingBuffer::DeviceRoutingBuffer(int num_moe_layers, int64_t max_tokens, int top_k, bool with_weights)
    : num_moe_layers_(num_moe_layers),
      max_tokens_(max_tokens),
      top_k_(top_k),
      ids_(static_cast<size_t>(num_moe_layers * max_tokens * top_k)) {
  if (with_weights) weights_.resize(ids_.size());
}

int64_t DeviceRoutingBuffer::bytes() const {
  return static_cast<int64_t>(ids_.size() * sizeof(int16_t) + weights_.size() * sizeof(float));
}

void DeviceRoutingBuffer::write(int layer, int64_t num_tokens, const int32_t* ids, const float* weights) {
  if (num_tokens > max_tokens_)
    throw Error("routing capture: a forward of " + std::to_string(num_tokens) + " tokens exceeds the " +
                std::to_string(max_tokens_) + " the capture buffer holds");
  int16_t* out = ids_.data() + layer * max_tokens_ * top_k_;
  const int64_t n = num_tokens * top_k_;
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int16_t>(ids[i]);
  if (weights_.empty()) return;
  float* w = weights_.data() + layer * max_tokens_ * top_k_;
  for (int64_t i = 0; i < n; ++i) w[i] = weights[i];
}

}  // namespace moe
