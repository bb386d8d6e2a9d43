#include "capture/copy_engine.h"

#include <utility>

namespace moe {

ThreadCopyEngine::ThreadCopyEngine(std::function<void()> on_ready, std::chrono::microseconds delay)
    : on_ready_(std::move(on_ready)), delay_(delay), thread_([this] { run(); }) {}

ThreadCopyEngine::~ThreadCopyEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void ThreadCopyEngine::start(const DeviceRoutingBuffer& source, uint64_t step, int64_t num_tokens) {
  {
    std::lock_guard lock(mutex_);
    pending_.push_back({&source, step, num_tokens});
    ++readers_[&source];
  }
  changed_.notify_all();
}

void ThreadCopyEngine::wait_source_free(const DeviceRoutingBuffer& source) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return readers_[&source] == 0; });
}

std::vector<StagedRouting> ThreadCopyEngine::take_completed() {
  std::lock_guard lock(mutex_);
  return std::exchange(completed_, {});
}

std::vector<StagedRouting> ThreadCopyEngine::drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    for (const auto& [source, count] : readers_)
      if (count) return false;
    return true;
  });
  return std::exchange(completed_, {});
}

StagedRouting ThreadCopyEngine::copy(const Job& job) {
  const DeviceRoutingBuffer& src = *job.source;
  const int L = src.num_moe_layers(), K = src.top_k();
  StagedRouting out{job.step, job.num_tokens, L, K, {}, {}};
  out.ids.resize(static_cast<size_t>(job.num_tokens * L * K));
  if (src.with_weights()) out.weights.resize(out.ids.size());
  // Device layout is layer-major (L, N, K); the host wants token-major (T, L, K).
  for (int l = 0; l < L; ++l) {
    const int16_t* ids = src.layer_ids(l);
    for (int64_t t = 0; t < job.num_tokens; ++t)
      for (int k = 0; k < K; ++k) out.ids[(t * L + l) * K + k] = ids[t * K + k];
    if (!src.with_weights()) continue;
    const float* w = src.layer_weights(l);
    for (int64_t t = 0; t < job.num_tokens; ++t)
      for (int k = 0; k < K; ++k) out.weights[(t * L + l) * K + k] = w[t * K + k];
  }
  return out;
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
    StagedRouting staged = copy(job);
    {
      std::lock_guard lock(mutex_);
      completed_.push_back(std::move(staged));  // one thread, FIFO jobs: completion order is step order
      --readers_[job.source];
    }
    changed_.notify_all();
    if (on_ready_) on_ready_();
  }
}

}  // namespace moe
