#pragma once
// The model worker's logic (no sockets): runs a WorkerBatch through the model, samples the
// sequences that need it and, when the batch asks, captures routing through the double-buffered
// capturer. It keeps no per-request state beyond KV contents addressed by slot.
#include <functional>
#include <memory>

#include "capture/routed_experts_capturer.h"
#include "model/model.h"
#include "moe/messages.h"

namespace moe {

struct ModelWorkerOptions {
  // What it serves (KV slots, capture buffer rows, capture with or without router weights, model
  // fingerprint); reported on every heartbeat, so the scheduler can refuse a mismatch.
  msg::WorkerSettings settings;
  // Called from the copy engine's thread (the CPU's copy thread, CUDA's host-callback thread) when a
  // step's rows can be taken.
  std::function<void()> on_routing_ready;
};

class ModelWorker {
 public:
  ModelWorker(std::unique_ptr<Model> model, const ModelWorkerOptions& options);

  const ModelConfig& config() const { return model_->config(); }
  // Forward + sampling of one step; routing rows whose copy has finished ride along. A batch that
  // asks for capture on a worker started without it is a moe::Error (the scheduler refuses such
  // requests earlier).
  msg::WorkerResult execute(const msg::WorkerBatch& batch);
  // Rows of finished copies not yet handed out, oldest step first.
  std::vector<msg::StepRouting> take_ready_routing();
  int64_t capture_device_bytes() const { return capturer_ ? capturer_->device_bytes() : 0; }
  // Drawn at construction: tells the scheduler which worker (and so which KV cache) answers it.
  uint64_t instance() const { return instance_; }
  // What the worker says of itself on every heartbeat.
  msg::Heartbeat heartbeat() const { return {instance_, settings_}; }

 private:
  std::unique_ptr<Model> model_;
  KvCache kv_;
  std::unique_ptr<RoutedExpertsCapturer> capturer_;  // null without --enable-return-routed-experts
  std::vector<float> logits_;
  msg::WorkerSettings settings_;
  uint64_t instance_;
};

}  // namespace moe
