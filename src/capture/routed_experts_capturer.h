#pragma once
// The routed-experts capturer the model worker attaches to the forward: MoE layers write top-k ids
// into one of two device buffers, and when the forward ends a copy engine moves them to host memory
// while the next forward fills the other buffer.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "capture/routing_host_cache.h"
#include "moe/routing_capture.h"

namespace moe {

// The capturer's "device cache": (num_moe_layers, N, K) int16, N = the most tokens one forward holds,
// so MoE layer l writes its top-k ids into a contiguous (N, K) block right after selection. Two such
// buffers alternate between steps so that step n+1 can fill one while step n's copy reads the other.
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

// Moves a step's routing from the device buffer to host memory without stalling the forward: the
// worker starts the copy of step n and runs step n+1 while it proceeds. On CPU the copy runs on a
// thread; a CUDA engine would use a copy stream and an event behind the same interface.
class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  // Starts copying rows 0..num_tokens-1 of every layer of `source` for `step`; returns at once.
  virtual void start(const DeviceRoutingBuffer& source, uint64_t step, int64_t num_tokens) = 0;
  // Blocks until no copy still reads `source`, so the next forward may overwrite it.
  virtual void wait_source_free(const DeviceRoutingBuffer& source) = 0;
  // The copies finished so far, in step order; never blocks.
  virtual std::vector<StagedRouting> take_completed() = 0;
  // Blocks until every started copy has finished, then returns all unclaimed ones in step order.
  virtual std::vector<StagedRouting> drain() = 0;
};

// The CPU copy engine: one copy thread. `on_ready` (optional) is called from the copy thread after
// each copy completes, so an event loop can post a wake-up; `delay` slows every copy (tests use it
// to prove the overlap).
class ThreadCopyEngine final : public CopyEngine {
 public:
  explicit ThreadCopyEngine(std::function<void()> on_ready = {},
                            std::chrono::microseconds delay = std::chrono::microseconds(0));
  ~ThreadCopyEngine() override;

  void start(const DeviceRoutingBuffer& source, uint64_t step, int64_t num_tokens) override;
  void wait_source_free(const DeviceRoutingBuffer& source) override;
  std::vector<StagedRouting> take_completed() override;
  std::vector<StagedRouting> drain() override;

 private:
  struct Job {
    const DeviceRoutingBuffer* source;
    uint64_t step;
    int64_t num_tokens;
  };
  void run();
  static StagedRouting copy(const Job& job);

  std::function<void()> on_ready_;
  std::chrono::microseconds delay_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> pending_;
  std::map<const DeviceRoutingBuffer*, int> readers_;  // copies queued or running per source
  std::vector<StagedRouting> completed_;
  bool stopping_ = false;
  std::thread thread_;
};

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
