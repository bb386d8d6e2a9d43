#pragma once
// The model worker's logic (no sockets): runs a WorkerBatch through the model, samples the
// sequences that need it and, when the batch asks, captures routing through the double-buffered
// capturer. Per request it keeps only each live sequence's KV slot table (SequenceTables, changed by
// every step it runs) beside KV contents addressed by slot.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "capture/routed_experts_capturer.h"
#include "model/model.h"
#include "moe/messages.h"
#include "worker/draft_model.h"
#include "model/eagle3_head.h"
#include "worker/hidden_state_drafter.h"
#include "worker/recent_samples.h"
#include "worker/sequence_tables.h"
#include "worker/weight_group_link.h"

namespace moe {

// The model's view of a worker batch: its tokens, positions and sequences, each viewing its KV slot
// table in `tables` (to which the batch was applied).
ForwardBatch to_forward_batch(const msg::WorkerBatch& batch, const SequenceTables& tables);

// Loads a checkpoint the way the serving model was loaded (device, MoE backend, expert placement,
// quantization), its projections quantized by `quantization` instead of the serving model's setting
// when that is given.
using ModelLoader =
    std::function<std::unique_ptr<Model>(const std::string& model_dir, std::optional<Quantization> quantization)>;

struct ModelWorkerOptions {
  // What it serves (KV slots, capture buffer rows, capture with or without router weights, model
  // fingerprint); reported on every heartbeat, so the scheduler can refuse a mismatch.
  msg::WorkerSettings settings;
  // Called from the copy engine's thread (the CPU's copy thread, CUDA's host-callback thread) when a
  // step's rows can be taken.
  std::function<void()> on_routing_ready;
  // Loads a weight update's checkpoint, and the draft model, the way the serving model was loaded;
  // unset, the worker refuses weight updates.
  ModelLoader load_checkpoint;
  // STANDALONE speculation's draft checkpoint (--speculative-draft-model-path), loaded by load_checkpoint
  // with draft_quantization (Model::load's defaults, quantized so, when load_checkpoint is unset); empty:
  // no draft model.
  std::string draft_model_path;
  // --speculative-draft-model-quantization; none: the draft is quantized as the serving model.
  std::optional<Quantization> draft_quantization;
  // EAGLE3 speculation: draft_model_path names an EAGLE-3 head (model/eagle3_head.h), read as it is,
  // not a draft model.
  bool eagle3 = false;
};

class ModelWorker {
 public:
  ModelWorker(std::unique_ptr<Model> model, const ModelWorkerOptions& options);

  const ModelConfig& config() const { return model_->config(); }
  // Forward + sampling of one step; routing rows whose copy has finished ride along. A batch that
  // asks for capture on a worker started without it is a moe::Error (the scheduler refuses such
  // requests earlier). With a draft model, draft-then-verify sequences get their trees drafted first
  // (returned in drafted_tokens/parents), and the draft runs every forward the target runs.
  msg::WorkerResult execute(const msg::WorkerBatch& batch);
  // A pipeline stage's share of a step: its layers over `hidden` (see Model::forward_stage), with
  // capture of its MoE layers. The last stage samples and returns the result; an earlier stage
  // returns nothing and the caller sends `hidden` on to the next stage.
  std::optional<msg::WorkerResult> execute_stage(const msg::WorkerBatch& batch, float* hidden);
  // Whether this worker holds the whole model (no pipeline parallelism).
  bool whole_model() const { return model_->is_first_stage() && model_->is_last_stage(); }
  bool last_stage() const { return model_->is_last_stage(); }
  // Rows of finished copies not yet handed out, oldest step first.
  std::vector<msg::StepRouting> take_ready_routing();
  // Loads update.model_path and, when it loaded and its config.json describes the model serving now,
  // swaps it in with an empty KV cache; otherwise the old model and its KV cache keep serving.
  // Both models are held during the load. Never throws: a failure is the answer's message. The
  // scheduler sends it only between steps, and ends every request the old weights began.
  // An update whose `memory` is set goes to change_memory.
  msg::WeightsUpdated update_weights(const msg::UpdateWeights& update);
  // release_memory_occupation and resume_memory_occupation (worker/memory_occupation.cpp). Tag
  // "kv_cache": the KV pool's pages go back to the system (Model::release_kv_memory) and come back
  // at resume. Tag "weights": the model is destroyed, its memory freed; at resume update.model_path
  // (the last checkpoint loaded, which the scheduler names) is loaded again, refused when its
  // fingerprint differs from the one it had at the release (the files changed meanwhile: the
  // weights would not be those of the last load). Releasing what is released, or resuming what is
  // not, changes nothing. The draft model's memory is kept. Never throws.
  msg::WeightsUpdated change_memory(const msg::UpdateWeights& update);
  // A weight group's call (worker/weight_group_calls.cpp): joining the trainer's NCCL group,
  // receiving the tensors it broadcasts and serving them, leaving it. Needs --device cuda in a build
  // with NCCL; elsewhere the answer says so. Never throws.
  msg::WeightsUpdated weight_group_call(const msg::UpdateWeights& update);
  int pp_rank() const { return settings_.pp_rank; }
  // Drawn at construction: tells the scheduler which worker (and so which KV cache) answers it.
  uint64_t instance() const { return instance_; }
  // What the worker says of itself on every heartbeat (called from the heartbeat's own thread).
  msg::Heartbeat heartbeat() const {
    std::lock_guard lock(settings_mutex_);
    return {instance_, settings_};
  }

 private:
  std::unique_ptr<RoutedExpertsCapturer> make_capturer() const;
  // Ends the capturer, its rows not yet handed out kept for take_ready_routing.
  void drop_capturer();
  // Puts `model` in the old one's place, with a KV cache (released if the KV cache is) and a
  // capturer of its own.
  void install(std::unique_ptr<Model> model);
  // A Receive of the weight group `group`: its tensors laid over update.model_path, loaded as an update.
  msg::WeightsUpdated receive_from_group(const msg::UpdateWeights& update, WeightGroupLink& group);
  // change_memory's halves: each says what it did.
  std::string release_memory(const msg::UpdateWeights& update);
  std::string resume_memory(const msg::UpdateWeights& update);
  // The draft model at `path`, loaded as weight updates are but quantized by `quantization` when
  // given; a failure names the flags.
  std::unique_ptr<DraftModel> load_draft(const std::string& path, std::optional<Quantization> quantization) const;
  // The EAGLE-3 head at `path`, over the model's embedding; a failure names the flag.
  std::unique_ptr<Eagle3Head> load_eagle3_head(const std::string& path);
  // The drafter over the hidden states of the model in place (EAGLE3's head, or the model's NEXTN
  // layer), or null.
  std::unique_ptr<HiddenStateDrafter> make_hidden_drafter();
  // A step's forward as run: the batch the model saw, and per MoE layer of this worker how many
  // distinct experts its draft-tree tokens used (empty without trees).
  struct ForwardRun {
    ForwardBatch forward;
    std::vector<int32_t> verify_experts;
    bool greedy_picks = false;  // the model made the step's draws itself, into picks_
  };
  // Whether every draw of `batch` is a plain greedy pick (temperature 0, nothing adjusting the
  // logits, no top alternatives, no draft tree) and the model makes such picks itself.
  bool model_picks(const msg::WorkerBatch& batch) const;
  // Forward (`run` is the model call) with the capture begun and ended around it when the batch asks.
  ForwardRun run_forward(const msg::WorkerBatch& batch,
                         const std::function<void(const ForwardBatch&, RoutingCapture*)>& run);
  // Samples every sequence that needs logits from logits_ (walking a draft tree along its accepted
  // drafts), or takes the model's picks_, and takes the ready routing rows.
  msg::WorkerResult sample(const msg::WorkerBatch& batch, ForwardRun run);
  // The drawn tokens of the step's sequences that need logits, in order (a tree's accepted drafts, then
  // one more), into result: ids, logprobs and top alternatives when any asked, and with a tree in the
  // batch each sequence's count.
  void draw(const msg::WorkerBatch& batch, const ForwardRun& run, msg::WorkerResult& result) const;

  ModelLoader load_checkpoint_;
  std::map<std::string, std::unique_ptr<WeightGroupLink>> weight_groups_;  // joined, by group name
  uint64_t overlays_written_ = 0;  // names each Receive's overlay directory
  std::unique_ptr<Model> model_;  // null while the weights are released
  KvCache kv_;
  bool kv_released_ = false;
  uint64_t released_fingerprint_ = 0;  // while the weights are released: their checkpoint's fingerprint then
  std::unique_ptr<RoutedExpertsCapturer> capturer_;  // null without --enable-return-routed-experts
  std::unique_ptr<DraftModel> draft_;  // null without STANDALONE speculation
  std::unique_ptr<Eagle3Head> eagle3_;  // null without EAGLE3 speculation
  // NEXTN speculation, over the model's next-token-prediction layer (a model loaded with
  // ModelOptions::nextn), or EAGLE3's, over eagle3_; made anew with each model; null otherwise.
  std::unique_ptr<HiddenStateDrafter> hidden_drafter_;
  std::vector<float> hidden_;  // with hidden_drafter_: the target's hidden states of the step, as its head reads them
  std::vector<float> layer_inputs_;  // with eagle3_: the states entering the layers it reads, [T, 3H]
  // The capturer's copy engine comes from the model (a GPU model's runs on its stream), so a weight
  // update makes a new one with these; rows the old one still held wait here for take_ready_routing.
  std::function<void()> on_routing_ready_;
  std::vector<msg::StepRouting> drained_routing_;
  std::vector<float> logits_;
  GreedyPicks picks_;
  RecentSamples recent_samples_;  // what the latest steps sampled, for steps that feed it unseen
  SequenceTables tables_;         // every live sequence's KV slots, as the steps so far left them
  int first_moe_layer_ = 0;  // the first of this worker's MoE layers among the model's
  mutable std::mutex settings_mutex_;  // the fingerprint changes with the weights
  msg::WorkerSettings settings_;
  uint64_t instance_;
};

}  // namespace moe
