#pragma once
// The routed-experts capturer the model worker attaches to the forward: each step's MoE layers write
// their top-k into one of the copy engine's two buffers (step parity), and when the forward ends the
// engine moves the rows to host memory while the next forward fills the other buffer.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "capture/copy_engine.h"

namespace moe {

class RoutedExpertsCapturer final : public RoutingCapture {
 public:
  explicit RoutedExpertsCapturer(std::unique_ptr<CopyEngine> copy_engine);

  // Before step `step`'s forward of `num_tokens` tokens: picks its buffer, which the copy of step - 2
  // read, and has the engine keep the forward's writes behind that copy.
  void begin_step(uint64_t step, int64_t num_tokens);
  // The step's buffer, as the model sees it (between begin_step and end_step only).
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float* weights) override;
  DeviceRoutingRows device_rows(int moe_layer) override;
  void device_rows_queued() override;
  // After the forward: starts the asynchronous copy of the step's rows and returns at once.
  void end_step();

  // Staged steps whose copy has finished, in step order (non-blocking).
  std::vector<StagedRouting> take_ready() { return copy_engine_->take_completed(); }
  // Every started step, waiting for copies still in flight.
  std::vector<StagedRouting> drain() { return copy_engine_->drain(); }
  bool with_weights() const { return copy_engine_->shape().with_weights; }

 private:
  RoutingCapture& current();

  std::unique_ptr<CopyEngine> copy_engine_;
  std::optional<uint64_t> step_;
  int64_t step_tokens_ = 0;
};

}  // namespace moe
