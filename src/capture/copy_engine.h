#pragma once
// Moves a step's routing from the device buffer to host memory without stalling the forward: the
// worker starts the copy of step n and runs step n+1 while it proceeds. On CPU the copy runs on a
// thread; a CUDA engine would use a copy stream and an event behind the same interface.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "capture/device_routing_buffer.h"
#include "capture/staged_routing.h"

namespace moe {

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

}  // namespace moe
