#include "cuda/host_routing_relay.h"

#include "common/error.h"

namespace moe::cuda {

void HostRoutingRelay::begin(RoutingCapture* target, int num_moe_layers, int64_t num_tokens, int top_k) {
  target_ = target;
  if (!target) return;
  num_layers_ = num_moe_layers;
  num_tokens_ = num_tokens;
  top_k_ = top_k;
  const auto elements = static_cast<size_t>(num_moe_layers * num_tokens * top_k);
  const DeviceRoutingRows own = target->device_rows(0);
  with_weights_ = !own.ids || own.weights;
  if (!own.ids) {
    ids_.reserve(elements);
    weights_.reserve(elements);
  }
  staged_ids_.reserve(elements);
  if (with_weights_) staged_weights_.reserve(elements);
}

DeviceRoutingRows HostRoutingRelay::device_rows(int moe_layer) {
  const DeviceRoutingRows own = target_->device_rows(moe_layer);
  if (own.ids) return own;
  const int64_t offset = moe_layer * num_tokens_ * top_k_;
  return {ids_.data() + offset, weights_.data() + offset, num_tokens_};
}

void HostRoutingRelay::on_routing(int, int64_t, int, const int32_t*, const float*) {
  throw Error("CUDA forward: the router writes device rows; host rows come back after the step");
}

void HostRoutingRelay::queue_copy(cudaStream_t stream) {
  const int64_t layer_elements = num_tokens_ * top_k_;
  for (int l = 0; l < num_layers_; ++l) {
    const DeviceRoutingRows rows = device_rows(l);
    check(cudaMemcpyAsync(staged_ids_.data() + l * layer_elements, rows.ids, layer_elements * sizeof(int16_t),
                          cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync (host routing rows)");
    if (with_weights_)
      check(cudaMemcpyAsync(staged_weights_.data() + l * layer_elements, rows.weights, layer_elements * sizeof(float),
                            cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync (host routing weights)");
  }
}

void HostRoutingRelay::deliver() {
  if (!target_) return;
  RoutingCapture* target = target_;
  target_ = nullptr;
  const int64_t layer_elements = num_tokens_ * top_k_;
  for (int l = 0; l < num_layers_; ++l) {
    const int16_t* ids = staged_ids_.data() + l * layer_elements;
    layer_ids_.assign(ids, ids + layer_elements);
    target->on_routing(l, num_tokens_, top_k_, layer_ids_.data(),
                       with_weights_ ? staged_weights_.data() + l * layer_elements : nullptr);
  }
}

}  // namespace moe::cuda
