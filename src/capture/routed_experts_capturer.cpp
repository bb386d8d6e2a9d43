#include "capture/routed_experts_capturer.h"

#include <utility>

#include "common/error.h"

namespace moe {

DeviceRoutingBuffer::DeviceRoutingBuffer(int num_moe_layers, int64_t max_tokens, int top_k, bool with_weights)
    : num_moe_layers_(num_moe_layers),
      max_tokens_(max_tokens),
      top_k_(top_k),
      ids_(static_cast<size_t>(num_moe_layers * max_tokens * top_k)) {
  if (with_weights) weights_.resize(ids_.size());
}

int64_t DeviceRoutingBuffer::bytes() const {
  return static_cast<int64_t>(ids_.size() * sizeof(int16_t) + weights_.size() * sizeof(float));
}

void DeviceRoutingBuffer::write(int layer, int64_t num_tokens, const int32_t* ids, const float* weights) {
  if (num_tokens > max_tokens_)
    throw Error("routing capture: a forward of " + std::to_string(num_tokens) + " tokens exceeds the " +
                std::to_string(max_tokens_) + " the capture buffer holds");
  int16_t* out = ids_.data() + layer * max_tokens_ * top_k_;
  const int64_t n = num_tokens * top_k_;
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int16_t>(ids[i]);
  if (weights_.empty()) return;
  float* w = weights_.data() + layer * max_tokens_ * top_k_;
  for (int64_t i = 0; i < n; ++i) w[i] = weights[i];
}

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

RoutedExpertsCapturer::RoutedExpertsCapturer(int num_moe_layers, int64_t max_tokens, int top_k, bool with_weights,
                                             std::unique_ptr<CopyEngine> copy_engine)
    : buffers_{DeviceRoutingBuffer(num_moe_layers, max_tokens, top_k, with_weights),
               DeviceRoutingBuffer(num_moe_layers, max_tokens, top_k, with_weights)},
      copy_engine_(std::move(copy_engine)) {}

void RoutedExpertsCapturer::begin_step(uint64_t step, int64_t num_tokens) {
  if (step_) throw Error("routing capture: step " + std::to_string(*step_) + " was never ended");
  if (num_tokens > buffers_[0].max_tokens())
    throw Error("routing capture: step of " + std::to_string(num_tokens) + " tokens exceeds the capture buffer");
  copy_engine_->wait_source_free(buffers_[step % 2]);
  step_ = step;
  step_tokens_ = num_tokens;
}

void RoutedExpertsCapturer::on_routing(int moe_layer, int64_t num_tokens, int, const int32_t* ids,
                                       const float* weights) {
  if (!step_) throw Error("routing capture: routing reported outside a step");
  buffers_[*step_ % 2].write(moe_layer, num_tokens, ids, weights);
}

void RoutedExpertsCapturer::end_step() {
  if (!step_) throw Error("routing capture: end_step without begin_step");
  copy_engine_->start(buffers_[*step_ % 2], *step_, step_tokens_);
  step_.reset();
}

}  // namespace moe
