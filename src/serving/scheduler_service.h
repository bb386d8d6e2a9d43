#pragma once
// The scheduler actor's logic without sockets: turns tokenized requests into worker batches, worker
// results into detokenizer items, and keeps every item's routed-experts rows exact (rows travel a
// step behind the tokens, so items of requests that asked for routing wait for their rows).
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "capture/routing_host_cache.h"
#include "moe/messages.h"
#include "scheduler/scheduler.h"
#include "serving/routing_rows_tracker.h"
#include "serving/worker_settings.h"

namespace moe {

// What the scheduler must know of the model it schedules for.
struct ServingModelInfo {
  int num_moe_layers = 0;
  int top_k = 0;
  int num_experts = 0;
};

struct SchedulerServiceOptions {
  SchedulerConfig scheduler;
  bool enable_routed_experts = false;  // --enable-return-routed-experts
  // --enable-return-router-weights: the host cache also keeps every row's top-k weights (float32,
  // three times the ids' bytes), so only servers that offer weights pay for them.
  bool enable_router_weights = false;
  uint64_t seed_source = 0;            // draws the seeds of requests that bring none
  // What each pipeline stage's worker must report (one entry without pipeline parallelism); a worker
  // that reports other settings gets no step.
  std::vector<msg::WorkerSettings> expected_stages;
  ServingWeights weights;               // what the worker serves at start
  // With capture on and an MoE STANDALONE draft: its row shape, whose rows every step then waits for
  // (return_draft_routed_experts); zero layers otherwise.
  DraftRowShape draft_routing{};
};

class SchedulerService {
 public:
  SchedulerService(const SchedulerServiceOptions& options, const ServingModelInfo& model);
  // The tracker calls back into the service that made it: never copied or moved.
  SchedulerService(const SchedulerService&) = delete;
  SchedulerService& operator=(const SchedulerService&) = delete;

  // Queues a request the front door validated, or refuses it (409) when its rid still names a live
  // request: a client may reuse a rid as soon as its reply ended, which can reach the front before
  // the detokenizer's stop report reaches the scheduler.
  std::optional<msg::ErrorReply> add_request(const msg::TokenizedRequest& request);
  // Ends every completion of rid (client gone, or asked); their final items say abort.
  void abort(const std::string& rid, const std::string& reason);
  // The detokenizer ended completion (rid, index) after kept_tokens output tokens (-1: all), at a stop
  // string or with an error: stop generating it. A reply that includes its last token's routing
  // waits in the detokenizer for that row, which a final item brings (after one more forward when
  // the token was not fed yet).
  void finish_by_stop_string(const std::string& rid, int32_t index, int64_t kept_tokens);
  // The next step to send, while fewer than max_batches_in_flight() are in flight and there is work;
  // null otherwise. It is the step the service keeps in flight, passed as it is (no copy of its
  // sequences' slot lists): valid until its result is applied or fail_all.
  const msg::WorkerBatch* next_batch();
  // One per pipeline stage, or two with overlapped scheduling.
  int max_batches_in_flight() const { return scheduler_.max_batches_in_flight(); }
  // A result that does not fit its step (sampled ids or routing rows) throws moe::Error and leaves
  // the step in flight: the caller fails every live request (fail_all).
  void on_worker_result(const msg::WorkerResult& result);
  // Rows that arrived on their own (the copy finished after the step's result was sent).
  void on_routing(const std::vector<msg::StepRouting>& routing);
  // The worker failed or vanished: every live request ends with an error.
  // `code` follows HTTP: 500 for a worker that failed, 503 for one that is missing or refused.
  std::vector<msg::ErrorReply> fail_all(const std::string& message, int32_t code = 500);
  // A worker's heartbeat (with pipeline parallelism, one stage's: settings.pp_rank). A new instance
  // whose settings match its stage's expected_stages entry is accepted (no step is planned until
  // every stage has one). Its KV cache is empty, so when steps went to an earlier worker,
  // every live request fails and the prefix cache is emptied first. A worker whose settings
  // differ is refused: it gets no step, and requests fail naming the setting. Returns the errors
  // of the requests that failed.
  std::vector<msg::ErrorReply> on_heartbeat(const msg::Heartbeat& heartbeat);
  // Whether a result or routing update comes from the accepted worker. One from any other instance
  // (a restarted worker answering a step queued for its predecessor) is dropped, and every live
  // request fails (errors in `errors`): the prefix cache and running requests describe KV that
  // the new worker does not have.
  bool from_accepted_worker(uint64_t instance, std::vector<msg::ErrorReply>& errors);
  bool worker_accepted() const;
  // The pipeline stage whose accepted worker is `instance`, if any.
  std::optional<int> stage_of(uint64_t instance) const;
  int num_stages() const { return static_cast<int>(stages_.size()); }
  // Whether a worker was ever accepted for pipeline stage `rank` (it may have gone silent since).
  bool stage_has_worker(int rank) const { return stages_.at(static_cast<size_t>(rank)).accepted != 0; }
  // Why a connected worker was refused; empty when none was.
  std::string worker_refusal() const;
  // What the accepted worker (pipeline stage 0's) reported of itself; none while none is accepted.
  std::optional<msg::WorkerSettings> accepted_settings() const;

  // --- Weight updates (update_weights_from_disk). An update is queued; from then on no step is
  // planned. Once no step is in flight it goes to the worker, which loads the new weights and
  // swaps them in only when they loaded. On success every request a step has run for ends with
  // finish reason abort (its tokens came from the old weights; its reply carries their version),
  // the prefix cache is flushed (its KV came from them too), the worker's expected fingerprint and
  // the weight version become the new ones, and queued requests run on the new weights. On
  // failure nothing changes: the paused requests go on as if nothing happened.
  void update_weights(msg::UpdateWeights update);
  // The update to send the worker now: one is queued, none is out, no step is in flight.
  std::optional<msg::UpdateWeights> next_weight_update();
  // The worker's answer (applied even when the update was given up meanwhile: the worker's weights
  // are what they are); queues the answer for the requester with the version now in effect.
  void on_weights_updated(msg::WeightsUpdated answer);
  // Memory released and resumed (an update whose `memory` is set, queued and sent as updates are):
  // from a release's answer until the resume's, no step is planned; requests that arrive queue. A
  // release first retracts every running request (as pause's retract mode: each is recomputed after
  // the resume, to the outputs of an unreleased run) and empties the prefix cache, for the pool's
  // contents are lost (with the weights too, where the pool lives in the model: a GPU's). A load (update_weights_from_disk) while the weights are
  // released is refused. A resume carries the weights of the last load (its model_path) for the worker
  // to restore.
  bool memory_released() const { return released_weights_ || released_kv_cache_; }
  // The worker was lost (silent, refused, restarted): every queued update fails with `why`.
  void fail_weight_updates(const std::string& why);
  bool has_weight_updates() const { return !updates_.empty(); }
  // Answers produced since the last call, for the requesters.
  std::vector<msg::WeightsUpdated> take_weight_update_answers() { return std::exchange(update_answers_, {}); }
  const ServingWeights& weights() const { return weights_; }
  // /update_weight_version: relabels the weights serving now; items emitted from now on carry it.
  void set_weight_version(std::string version) { weights_.weight_version = std::move(version); }

  // --- Pausing generation (/pause_generation, /continue_generation). While paused no step is
  // planned and requests that arrive queue; the steps in flight finish and their tokens go out.
  // Retract: once no step is in flight, every running request is retracted
  // (Scheduler::retract_running) and resumes, recomputed, after continue_generation(). Abort mode
  // is the front door's: it aborts every request, then pauses in place. Weight updates go on while
  // paused.
  void pause_generation(msg::PauseMode mode) { pause_ = mode; }
  void continue_generation() { pause_.reset(); }
  bool generation_paused() const { return pause_.has_value(); }

  // Items produced since the last call, for the detokenizer.
  msg::DetokenizeBatch take_output();
  bool batch_in_flight() const { return !in_flight_.empty(); }
  bool step_in_flight(uint64_t step) const { return in_flight_.count(step) > 0; }
  bool has_unfinished() const { return scheduler_.has_unfinished(); }
  // Items held back until rows still on their way from the worker arrive.
  bool awaiting_rows() const { return !held_.empty(); }
  SchedulerStats stats() const;
  int64_t kv_cache_slots() const { return scheduler_.kv_cache_slots(); }
  int64_t host_cache_bytes() const { return tracker_ ? tracker_->host_cache().bytes() : 0; }
  void flush_cache() { scheduler_.flush_cache(); }
  // Tokens routed to each expert, counts[moe layer][expert], since start or the last reset (every
  // step's rows, so recomputed tokens count again); empty without --enable-return-routed-experts.
  std::vector<std::vector<uint64_t>> expert_load() const;
  // Tokens (rows) counted into expert_load().
  uint64_t expert_load_tokens() const { return load_ ? load_->rows_counted() : 0; }
  // Zeroes expert_load() and its tokens: a new counting window starts.
  void reset_expert_load() {
    if (load_) load_->reset();
  }
  // Overwrites every routing row of the host cache (tests prove no stale or unset row is returned).
  void fill_routing_rows(int16_t value) {
    if (tracker_) tracker_->host_cache().fill(value);
  }

 private:
  // Sends each record on to the detokenizer (stamped with the weight version), or, for a request
  // that asked for routing, holds it until the rows of `step` (and so of every position it reports)
  // have arrived.
  void emit(std::vector<CompletionRecord> records, uint64_t step);
  // Sends the held records at the front of the queue whose step's rows are stored on, each with the
  // rows of its row_slots (unless it was dropped); the tracker calls it after each step it stores.
  void release_stored();
  // Whether rid's reply may still get records: a live request, or records held for their rows.
  bool in_use(const std::string& rid) const;
  // A new worker's KV cache is empty: when steps went to the last one, every live request fails
  // and the prefix cache is emptied. Returns the errors.
  std::vector<msg::ErrorReply> forget_worker_kv();

  SchedulerServiceOptions options_;
  ServingModelInfo model_;
  Scheduler scheduler_;
  std::optional<RoutingRowsTracker> tracker_;
  std::optional<ExpertLoadCounter> load_;  // engaged with tracker_
  std::map<uint64_t, ScheduledBatch> in_flight_;  // by step
  // Distinct experts per MoE layer of the steps that verified draft trees, summed; and the pairs.
  int64_t verify_distinct_experts_ = 0;
  int64_t verify_layer_passes_ = 0;
  uint64_t last_step_ = 0;
  struct StageWorker {
    uint64_t accepted = 0;  // the instance that gets steps; 0 = none yet, or it went away
    uint64_t refused = 0;
    std::string refusal;
    msg::WorkerSettings settings;  // the accepted instance's
  };
  std::vector<StageWorker> stages_;  // one per pipeline stage
  bool steps_sent_ = false;  // since the last worker was accepted: the KV cache holds their work
  // Records of requests that asked for routing, oldest first, each waiting for the rows of its step
  // (and of every step before it): the one queue of them; they go out in this order. The scheduler forgets a request when it
  // finishes; its rid stays in use until its held records are out. A record of a completion the
  // detokenizer ended meanwhile (a stop string) is dropped instead.
  struct HeldRecord {
    CompletionRecord record;
    uint64_t step = 0;  // its rows are in once the tracker has stored every step up to this one
    bool dropped = false;
  };
  std::deque<HeldRecord> held_;
  msg::DetokenizeBatch output_;
  ServingWeights weights_;
  std::deque<msg::UpdateWeights> updates_;  // the front one went to the worker when update_sent_
  bool update_sent_ = false;
  std::vector<msg::WeightsUpdated> update_answers_;
  // The worker's answer to a release or a resume (the memory now released), or to a group's join or
  // leave (nothing changes here).
  void on_memory_changed(msg::WeightsUpdated answer);

  std::optional<msg::PauseMode> pause_;  // set while generation is paused
  bool released_weights_ = false;        // the worker's weights are released (release_memory_occupation)
  bool released_kv_cache_ = false;       // its KV pool is
};

}  // namespace moe
