#pragma once
// The routed-experts capturer the model worker attaches to the forward: MoE layers write top-k ids
// into one of two device buffers, and when the forward ends a copy engine moves them to host memory
// while the next forward fills the other buffer.
#include <array>
#include <memory>
#include <optional>

#include "capture/copy_engine.h"
#include "capture/device_routing_buffer.h"
#include "moe/routing_capture.h"

namespace moe {

class RoutedExpertsCapturer final : public RoutingCapture {
 public:
  RoutedExpertsCapturer(int num_moe_layers, int64_t max_tokens, int top_k, bool with_weights,
                        std::unique_ptr<CopyEngine> copy_engine);

  // Before step `step`'s forward of `num_tokens` tokens: picks its buffer, waiting (rarely) until the
  // copy of step - 2, which read that buffer, has finished.
  void begin_step(uint64_t step, int64_t num_tokens);
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float* weights) override;
  // After the forward: starts the asynchronous copy of the step's rows and returns at once.
  void end_step();

  // Staged steps whose copy has finished, in step order (non-blocking).
  std::vector<StagedRouting> take_ready() { return copy_engine_->take_completed(); }
  // Every started step, waiting for copies still in flight.
  std::vector<StagedRouting> drain() { return copy_engine_->drain(); }
  int64_t device_bytes() const { return 2 * buffers_[0].bytes(); }
  bool with_weights() const { return buffers_[0].with_weights(); }

 private:
  std::array<DeviceRoutingBuffer, 2> buffers_;
  std::unique_ptr<CopyEngine> copy_engine_;
  std::optional<uint64_t> step_;
  int64_t step_tokens_ = 0;
};

}  // namespace moe
