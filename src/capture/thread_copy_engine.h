#pragma once
// The CPU model's copy engine: its two capture buffers are host memory standing in for the device's,
// and a copy thread moves each step's rows out of them while the next forward runs.
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "capture/copy_engine.h"

namespace moe {

// One capture buffer in host memory; MoE layers hand it their rows through on_routing.
class HostRoutingBuffer final : public RoutingCapture {
 public:
  explicit HostRoutingBuffer(const RoutingBufferShape& shape);

  // Layer `moe_layer`'s rows 0..num_tokens-1 from the router's int32 ids (and float weights).
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float* weights) override;
  // The first num_tokens rows of every layer, staged token-major.
  StagedRouting stage(uint64_t step, int64_t num_tokens) const;

 private:
  RoutingBufferShape shape_;
  std::vector<int16_t> ids_;    // [L, N, K]
  std::vector<float> weights_;  // [L, N, K] or empty
};

// `on_ready` (optional) is called from the copy thread after each copy completes, so an event loop
// can post a wake-up; `delay` slows every copy (tests use it to prove the overlap).
class ThreadCopyEngine final : public CopyEngine {
 public:
  explicit ThreadCopyEngine(const RoutingBufferShape& shape, std::function<void()> on_ready = {},
                            std::chrono::microseconds delay = std::chrono::microseconds(0));
  ~ThreadCopyEngine() override;

  RoutingCapture& buffer(int index) override { return buffers_[index]; }
  void prepare_write(int index) override;
  void start(int index, uint64_t step, int64_t num_tokens) override;
  std::vector<StagedRouting> take_completed() override;
  std::vector<StagedRouting> drain() override;

 private:
  struct Job {
    int buffer;
    uint64_t step;
    int64_t num_tokens;
  };
  void run();

  std::array<HostRoutingBuffer, 2> buffers_;
  std::function<void()> on_ready_;
  std::chrono::microseconds delay_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> pending_;
  std::array<int, 2> readers_ = {0, 0};  // copies queued or running per buffer
  std::vector<StagedRouting> completed_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once everything it reads exists
};

}  // namespace moe
