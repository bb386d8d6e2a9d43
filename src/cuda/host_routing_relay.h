#pragma once
// A step's routing for a capture that takes host rows (RoutingCapture::takes_host_rows: a draft
// model's own rows, a verify pass's expert count). The router kernels write into the capture's
// device block where it has one, else into this relay's; after the step every layer's rows come
// back into pinned memory and go to the capture's on_routing layer by layer, as the CPU model hands
// them over. Such steps never run as CUDA graphs.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/device_array.h"
#include "moe/routing_capture.h"

namespace moe::cuda {

class HostRoutingRelay final : public RoutingCapture {
 public:
  // Starts a step of num_tokens tokens for `target` (null: no step relays rows).
  void begin(RoutingCapture* target, int num_moe_layers, int64_t num_tokens, int top_k);
  bool active() const { return target_ != nullptr; }

  DeviceRoutingRows device_rows(int moe_layer) override;
  void device_rows_queued() override { target_->device_rows_queued(); }
  // The GPU writes device rows: a call here is a moe::Error.
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float* weights) override;

  // Queues the copy of every layer's rows into pinned memory on `stream`, after the step's kernels.
  void queue_copy(cudaStream_t stream);
  // Once the stream has finished: each layer's rows to the target's on_routing; ends the step.
  void deliver();

 private:
  RoutingCapture* target_ = nullptr;
  int num_layers_ = 0, top_k_ = 0;
  int64_t num_tokens_ = 0;
  bool with_weights_ = false;  // whether the blocks written hold weights
  DeviceArray<int16_t> ids_;   // [layers, T, K]: the relay's own block, for targets without one
  DeviceArray<float> weights_;
  PinnedArray<int16_t> staged_ids_;
  PinnedArray<float> staged_weights_;
  std::vector<int32_t> layer_ids_;  // one layer's ids widened for on_routing
};

}  // namespace moe::cuda
