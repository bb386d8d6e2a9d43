#pragma once
// The copy engine of a model on a GPU. Its two capture buffers are device memory, (L_moe, N, K) int16
// ids (and float32 weights), which the router kernels write directly. At the end of a step the rows
// used (T per layer) are copied on a copy stream of its own into pinned host staging, double-buffered
// like the device buffers; the copy waits for an event recorded after the forward's last MoE layer,
// and the next forward starts without waiting for it. Each buffer is reused only after the event of
// the copy that read it: the model's stream waits for it on the device before overwriting a device
// buffer, and the host before overwriting a staging buffer it has not read yet.
#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "capture/copy_engine.h"
#include "cuda/device_array.h"
#include "cuda/event.h"
#include "cuda/stream.h"

namespace moe::cuda {

// Test hooks: proof that the copy overlaps the next forward and that rows stay exact when it is late.
struct CopyTestHooks {
  // Each copy first holds the copy stream this long (a spinning kernel), as a slow copy would.
  std::chrono::microseconds delay{0};
  // Keeps device timestamps of every step: rows queued (model stream), copy begun and ended.
  bool record_times = false;
};

class CudaCopyEngine final : public CopyEngine {
 public:
  // One step's timestamps (record_times): the copy of step `step` ran from copy_begin to copy_end,
  // after rows_queued, which the model's stream reached after the step's last MoE layer.
  struct StepTimes {
    uint64_t step;
    Event rows_queued, copy_begin, copy_end;
  };

  // `model_stream` is where the model queues every step (it must outlive the engine); `on_ready`
  // (optional) runs on CUDA's host-callback thread after each copy, and must make no CUDA call.
  CudaCopyEngine(cudaStream_t model_stream, const RoutingBufferShape& shape, std::function<void()> on_ready,
                 CopyTestHooks hooks = {});

  RoutingCapture& buffer(int index) override { return buffers_[index]; }
  void prepare_write(int index) override;
  void start(int index, uint64_t step, int64_t num_tokens) override;
  std::vector<StagedRouting> take_completed() override;
  std::vector<StagedRouting> drain() override;

  // Every started step's timestamps, oldest first (empty without hooks.record_times).
  const std::deque<StepTimes>& step_times() const { return step_times_; }

 private:
  // One capture buffer on the device, as the model's router kernels see it.
  class DeviceBuffer final : public RoutingCapture {
   public:
    DeviceBuffer(const RoutingBufferShape& shape, cudaStream_t model_stream, Event::Timing timing);

    void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float* weights) override;
    DeviceRoutingRows device_rows(int moe_layer) override;
    // Records rows_queued on the model's stream: the copy waits for it.
    void device_rows_queued() override;

    const int16_t* ids() const { return ids_.data(); }
    const float* weights() const { return weights_.empty() ? nullptr : weights_.data(); }
    Event& rows_queued() { return rows_queued_; }

   private:
    RoutingBufferShape shape_;
    cudaStream_t model_stream_;
    DeviceArray<int16_t> ids_;
    DeviceArray<float> weights_;
    Event rows_queued_;
  };

  struct Copy {
    int buffer;
    uint64_t step;
    int64_t num_tokens;
  };

  // Stages the oldest copy in flight into completed_, waiting for it if it has not finished.
  void stage_oldest();
  static void CUDART_CB notify_ready(void* engine);

  cudaStream_t model_stream_;
  std::function<void()> on_ready_;
  CopyTestHooks hooks_;
  std::array<DeviceBuffer, 2> buffers_;
  std::array<PinnedArray<int16_t>, 2> staged_ids_;  // [L, T, K] of the copy that used it last
  std::array<PinnedArray<float>, 2> staged_weights_;
  std::array<Event, 2> copied_;  // recorded after each buffer's latest copy
  std::deque<Copy> in_flight_;   // started, not yet staged; step order (one stream: completion order too)
  std::vector<StagedRouting> completed_;
  std::deque<StepTimes> step_times_;
  // Last: destroyed first, it waits for the copies (and callbacks) still queued on it before the
  // memory they write and the hook they call go away.
  Stream copy_stream_;
};

}  // namespace moe::cuda
