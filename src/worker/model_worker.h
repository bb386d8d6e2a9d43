#pragma once
// The model worker's logic (no sockets): runs a WorkerBatch through the model, samples the
// sequences that need it and, when the batch asks, captures routing through the double-buffered
// capturer. It keeps no per-request state beyond KV contents addressed by slot.
#include <functional>
#include <memory>
#include <mutex>
#include <string>

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
  // Loads a weight update's checkpoint the way the serving model was loaded (device, MoE backend,
  // expert placement); unset, the worker refuses weight updates.
  std::function<std::unique_ptr<Model>(const std::string& model_dir)> load_model;
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
  // Loads update.model_path and, when it loaded and its config.json describes the model serving now,
  // swaps it in with an empty KV cache; otherwise the old model and its KV cache keep serving.
  // Both models are held during the load. Never throws: a failure is the answer's message. The
  // scheduler sends it only between steps, and ends every request the old weights began.
  msg::WeightsUpdated update_weights(const msg::UpdateWeights& update);
  // Drawn at construction: tells the scheduler which worker (and so which KV cache) answers it.
  uint64_t instance() const { return instance_; }
  // What the worker says of itself on every heartbeat (called from the heartbeat's own thread).
  msg::Heartbeat heartbeat() const {
    std::lock_guard lock(settings_mutex_);
    return {instance_, settings_};
  }

 private:
  // The tokens of the step's sequences that need logits, in order (a tree's accepted drafts, then one
  // more); their logprobs when any asked; with a tree in the batch, each sequence's count.
  std::vector<int32_t> sample(const msg::WorkerBatch& batch, const ForwardBatch& forward, std::vector<float>& logprobs,
                              std::vector<int32_t>& counts) const;

  std::function<std::unique_ptr<Model>(const std::string&)> load_model_;
  std::unique_ptr<Model> model_;
  KvCache kv_;
  std::unique_ptr<RoutedExpertsCapturer> capturer_;  // null without --enable-return-routed-experts
  std::vector<float> logits_;
  mutable std::mutex settings_mutex_;  // the fingerprint changes with the weights
  msg::WorkerSettings settings_;
  uint64_t instance_;
};

}  // namespace moe
