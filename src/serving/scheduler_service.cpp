#include "serving/scheduler_service.h"

#include <algorithm>
#include <limits>
#include <set>

#include "common/error.h"
#include "serving/worker_settings.h"

namespace moe {

SchedulerService::SchedulerService(const SchedulerServiceOptions& options, const ServingModelInfo& model)
    : options_(options),
      model_(model),
      scheduler_(options.scheduler, options.seed_source),
      stages_(options.expected_stages.size()),
      weights_(options.weights) {
  if (stages_.empty()) throw Error("SchedulerService: no expected worker settings");
  // With capture on, every step is captured (not only steps with a request that asked): a later
  // request's prefix-cache hit must find real rows for slots computed on behalf of anyone.
  if (options.enable_routed_experts) {
    tracker_.emplace(scheduler_.kv_cache_slots(), model.num_moe_layers, model.top_k, options.enable_router_weights,
                     options.draft_routing, [this] { release_stored(); });
    load_.emplace(model.num_moe_layers, model.num_experts);
  }
}

std::optional<msg::ErrorReply> SchedulerService::add_request(const msg::TokenizedRequest& request) {
  if (const std::string refusal = worker_refusal(); !refusal.empty())
    return msg::ErrorReply{request.rid, "the model worker was refused: " + refusal, 503, "scheduler", {}};
  if (in_use(request.rid))
    // (The rid goes by its client's name here; the front door gives the client back its own.)
    return msg::ErrorReply{request.rid, "the rid is still in use: its previous request is ending, retry", 409,
                           "scheduler", {}};
  Request queued;
  static_cast<msg::TokenizedRequest&>(queued) = request;
  scheduler_.add_request(std::move(queued));
  return std::nullopt;
}

void SchedulerService::abort(const std::string& rid, const std::string& reason) {
  emit(scheduler_.abort(rid, reason), last_step_);
}

void SchedulerService::finish_by_stop_string(const std::string& rid, int32_t index, int64_t kept_tokens) {
  const bool awaits_last_row = kept_tokens >= 0 && scheduler_.routes_last_token(rid);
  const int64_t kept = kept_tokens >= 0 ? kept_tokens : std::numeric_limits<int64_t>::max();
  std::optional<CompletionRecord> done = scheduler_.stop_at_output(rid, index, kept, msg::FinishReason::stop_string(""));
  if (!done) return;  // gone already, or its final record comes after the last token's forward
  if (awaits_last_row) {
    std::vector<CompletionRecord> records;
    records.push_back(std::move(*done));
    emit(std::move(records), last_step_);
    return;
  }
  // The detokenizer already sent the final reply: records still held for their rows go nowhere.
  for (HeldRecord& held : held_)
    if (held.record.rid == rid && held.record.index == index) held.dropped = true;
}

const msg::WorkerBatch* SchedulerService::next_batch() {
  if (pause_) {
    if (*pause_ == msg::PauseMode::Retract && in_flight_.empty()) {
      scheduler_.retract_running();
      pause_ = msg::PauseMode::InPlace;  // what is running from now on was queued while paused: nothing
    }
    return nullptr;
  }
  // A queued weight update waits for the step in flight; no new one starts before it is done.
  if (static_cast<int>(in_flight_.size()) >= scheduler_.max_batches_in_flight() || !worker_accepted() ||
      !updates_.empty() || memory_released())
    return nullptr;
  std::optional<ScheduledBatch> batch = scheduler_.schedule_step();
  if (!batch) return nullptr;
  if (tracker_) tracker_->step_scheduled(batch->step, batch->token_slots());
  last_step_ = batch->step;
  steps_sent_ = true;
  batch->capture_routing = tracker_.has_value();
  batch->capture_router_weights = tracker_ && options_.enable_router_weights;
  for (const StageWorker& stage : stages_) batch->stage_instances.push_back(stage.accepted);
  return &in_flight_.emplace(batch->step, std::move(*batch)).first->second;
}

void SchedulerService::on_routing(const std::vector<msg::StepRouting>& routing) {
  if (!tracker_) return;
  for (const msg::StepRouting& step : routing) {
    tracker_->rows_arrived(step);
    load_->add(step.rows.expert_ids.data(), step.rows.num_rows(), step.rows.top_k, step.first_layer,
               step.rows.num_layers);
  }
}

void SchedulerService::on_worker_result(const msg::WorkerResult& result) {
  const auto flying = in_flight_.find(result.step);
  if (flying == in_flight_.end())
    throw Error("worker result for step " + std::to_string(result.step) + " that is not in flight");
  // Forgotten only once applied: a result that does not fit its step leaves it in flight on both
  // sides (the scheduler checks before it changes anything), never in flight for one of them only,
  // which would leave its requests marked in flight, never scheduled again.
  on_routing(result.routing);
  if (tracker_) tracker_->draft_rows_arrived(result.step, result.draft_routing);
  flying->second.adopt_drafted_trees(result.drafted_tokens, result.drafted_parents);
  std::vector<CompletionRecord> records = scheduler_.process_result(
      flying->second, result.sampled_ids, result.logprobs, result.sampled_counts, result.top_logprobs,
      {result.prompt_logprobs, result.prompt_top_logprobs});
  const uint64_t step = flying->first;
  in_flight_.erase(flying);
  for (int32_t distinct : result.verify_experts) verify_distinct_experts_ += distinct;
  verify_layer_passes_ += static_cast<int64_t>(result.verify_experts.size());
  emit(std::move(records), step);
}

std::vector<msg::ErrorReply> SchedulerService::fail_all(const std::string& message, int32_t code) {
  // Every rid whose reply has not ended: live in the scheduler, or with records held for their rows.
  std::set<std::string> rids;
  for (std::string& rid : scheduler_.begun_requests(true)) rids.insert(std::move(rid));
  for (const HeldRecord& held : held_)
    if (!held.dropped) rids.insert(held.record.rid);
  in_flight_.clear();
  scheduler_.abandon_in_flight();
  if (tracker_) tracker_->reset();
  held_.clear();
  std::vector<msg::ErrorReply> errors;
  for (const std::string& rid : rids) {
    scheduler_.abort(rid, message);
    errors.push_back({rid, message, code, "scheduler", {}});
  }
  return errors;
}

std::vector<msg::ErrorReply> SchedulerService::on_heartbeat(const msg::Heartbeat& heartbeat) {
  // A worker of a rank this pipeline does not have is refused in stage 0's place, naming the difference.
  const int rank = heartbeat.settings.pp_rank >= 0 && heartbeat.settings.pp_rank < num_stages() ? heartbeat.settings.pp_rank : 0;
  StageWorker& stage = stages_[rank];
  const msg::WorkerSettings& expected = options_.expected_stages[rank];
  if (heartbeat.instance == stage.accepted || heartbeat.instance == stage.refused) return {};
  std::vector<msg::ErrorReply> errors = forget_worker_kv();
  if (std::optional<std::string> mismatch = settings_mismatch(expected, heartbeat.settings, weights_)) {
    stage.accepted = 0;
    stage.refused = heartbeat.instance;
    stage.refusal = *mismatch;
  } else {
    stage = {heartbeat.instance, 0, {}, heartbeat.settings};
  }
  return errors;
}

bool SchedulerService::from_accepted_worker(uint64_t instance, std::vector<msg::ErrorReply>& errors) {
  if (stage_of(instance)) return true;
  errors = forget_worker_kv();
  // Which stage restarted is not known: each gets steps again once its heartbeat shows its settings.
  for (StageWorker& stage : stages_) stage.accepted = 0;
  return false;
}

bool SchedulerService::worker_accepted() const {
  return std::all_of(stages_.begin(), stages_.end(), [](const StageWorker& s) { return s.accepted != 0; });
}

std::optional<int> SchedulerService::stage_of(uint64_t instance) const {
  for (int rank = 0; rank < num_stages(); ++rank)
    if (instance != 0 && stages_[rank].accepted == instance) return rank;
  return std::nullopt;
}

std::string SchedulerService::worker_refusal() const {
  for (int rank = 0; rank < num_stages(); ++rank) {
    if (stages_[rank].refusal.empty()) continue;
    return num_stages() == 1 ? stages_[rank].refusal
                             : "pipeline stage " + std::to_string(rank) + ": " + stages_[rank].refusal;
  }
  return {};
}

std::optional<msg::WorkerSettings> SchedulerService::accepted_settings() const {
  if (stages_.front().accepted == 0) return std::nullopt;
  return stages_.front().settings;
}

std::vector<msg::ErrorReply> SchedulerService::forget_worker_kv() {
  // The weights it was asked to load went with it (a new worker loads --model-path).
  if (update_sent_) fail_weight_updates("the model worker restarted during the weight update");
  if (!steps_sent_) return {};
  steps_sent_ = false;
  std::vector<msg::ErrorReply> errors = fail_all("the model worker restarted: its KV cache and routing rows were lost");
  scheduler_.flush_cache();
  return errors;
}

SchedulerStats SchedulerService::stats() const {
  SchedulerStats stats = scheduler_.stats();
  stats.verify_distinct_experts = verify_distinct_experts_;
  stats.verify_layer_passes = verify_layer_passes_;
  return stats;
}

std::vector<std::vector<uint64_t>> SchedulerService::expert_load() const {
  return load_ ? load_->snapshot() : std::vector<std::vector<uint64_t>>{};
}

msg::DetokenizeBatch SchedulerService::take_output() { return std::exchange(output_, {}); }

void SchedulerService::emit(std::vector<CompletionRecord> records, uint64_t step) {
  for (CompletionRecord& record : records) {
    // The version of now: records held for their rows are sent later, maybe after a weight update.
    record.weight_version = weights_.weight_version;
    if (!tracker_ || !record.routing.return_routed_experts) {
      output_.items.push_back(std::move(record));
      continue;
    }
    held_.push_back({std::move(record), step});
    release_stored();
  }
}

void SchedulerService::release_stored() {
  while (!held_.empty() && tracker_->rows_stored_through(held_.front().step)) {
    HeldRecord held = std::move(held_.front());
    held_.pop_front();
    if (held.dropped) continue;
    CompletionRecord& record = held.record;
    if (!record.row_slots.empty()) {
      const auto count = static_cast<int64_t>(record.row_slots.size());
      record.routed_experts = tracker_->gather(record.row_slots.data(), count, record.routing.return_router_weights);
      if (record.routing.return_draft_routed_experts)
        record.draft_routed_experts = tracker_->gather_draft(record.row_slots.data(), count);
    }
    output_.items.push_back(std::move(record));
  }
}

bool SchedulerService::in_use(const std::string& rid) const {
  return scheduler_.has_request(rid) || std::any_of(held_.begin(), held_.end(), [&rid](const HeldRecord& held) {
           return !held.dropped && held.record.rid == rid;
         });
}

}  // namespace moe
