#include "capture/thread_copy_engine.h"

#include <string>
#include <utility>

#include "common/error.h"
#include "common/thread_name.h"

namespace moe {

HostRoutingBuffer::HostRoutingBuffer(const RoutingBufferShape& shape)
    : shape_(shape), ids_(static_cast<size_t>(shape.elements())) {
  if (shape.with_weights) weights_.resize(ids_.size());
}

void HostRoutingBuffer::on_routing(int moe_layer, int64_t num_tokens, int, const int32_t* ids, const float* weights) {
  if (num_tokens > shape_.max_tokens)
    throw Error("routing capture: a forward of " + std::to_string(num_tokens) + " tokens exceeds the " +
                std::to_string(shape_.max_tokens) + " the capture buffer holds");
  const int64_t offset = moe_layer * shape_.max_tokens * shape_.top_k;
  const int64_t n = num_tokens * shape_.top_k;
  for (int64_t i = 0; i < n; ++i) ids_[offset + i] = static_cast<int16_t>(ids[i]);
  if (weights_.empty()) return;
  for (int64_t i = 0; i < n; ++i) weights_[offset + i] = weights[i];
}

StagedRouting HostRoutingBuffer::stage(uint64_t step, int64_t num_tokens) const {
  return stage_token_major(step, num_tokens, shape_, ids_.data(), weights_.empty() ? nullptr : weights_.data(),
                           shape_.max_tokens * shape_.top_k);
}

ThreadCopyEngine::ThreadCopyEngine(const RoutingBufferShape& shape, std::function<void()> on_ready,
                                   std::chrono::microseconds delay)
    : CopyEngine(shape),
      buffers_{HostRoutingBuffer(shape), HostRoutingBuffer(shape)},
      on_ready_(std::move(on_ready)),
      delay_(delay),
      thread_([this] {
        name_this_thread("routing-copy");
        run();
      }) {}

ThreadCopyEngine::~ThreadCopyEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void ThreadCopyEngine::prepare_write(int index) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return readers_[index] == 0; });
}

void ThreadCopyEngine::start(int index, uint64_t step, int64_t num_tokens) {
  {
    std::lock_guard lock(mutex_);
    pending_.push_back({index, step, num_tokens});
    ++readers_[index];
  }
  changed_.notify_all();
}

std::vector<StagedRouting> ThreadCopyEngine::take_completed() {
  std::lock_guard lock(mutex_);
  return std::exchange(completed_, {});
}

std::vector<StagedRouting> ThreadCopyEngine::drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return readers_[0] == 0 && readers_[1] == 0; });
  return std::exchange(completed_, {});
}

void ThreadCopyEngine::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;
      job = pending_.front();
      pending_.pop_front();
    }
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    StagedRouting staged = buffers_[job.buffer].stage(job.step, job.num_tokens);
    {
      std::lock_guard lock(mutex_);
      completed_.push_back(std::move(staged));  // one thread, FIFO jobs: completion order is step order
      --readers_[job.buffer];
    }
    changed_.notify_all();
    if (on_ready_) on_ready_();
  }
}

}  // namespace moe
