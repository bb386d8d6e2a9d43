#include "serving/scheduler_service.h"

#include <algorithm>
#include <limits>

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
                     options.draft_routing);
    load_.emplace(model.num_moe_layers, model.num_experts);
  }
}

std::optional<msg::ErrorReply> SchedulerService::add_request(const msg::TokenizedRequest& request) {
  if (const std::string refusal = worker_refusal(); !refusal.empty())
    return msg::ErrorReply{request.rid, "the model worker was refused: " + refusal, 503, "scheduler", {}};
  if (requests_.count(request.rid) || scheduler_.has_request(request.rid))
    // (The rid goes by its client's name here; the front door gives the client back its own.)
    return msg::ErrorReply{request.rid, "the rid is still in use: its previous request is ending, retry", 409,
                           "scheduler", {}};
  Request queued;
  static_cast<msg::TokenizedRequest&>(queued) = request;
  scheduler_.add_request(std::move(queued));
  RequestInfo info;
  info.options = request;
  info.prompt_tokens = static_cast<int32_t>(request.input_ids.size());
  info.live_completions = request.sampling.n;
  requests_[request.rid] = std::move(info);
  for (int32_t i = 0; i < request.sampling.n; ++i) completions_[{request.rid, i}] = {};
  return std::nullopt;
}

void SchedulerService::abort(const std::string& rid, const std::string& reason) {
  emit_finished(scheduler_.abort(rid, reason), last_step_);
}

void SchedulerService::finish_by_stop_string(const std::string& rid, int32_t index, int64_t kept_tokens) {
  const auto info = requests_.find(rid);
  const bool awaits_last_row =
      kept_tokens >= 0 && info != requests_.end() && info->second.options.routing.routes_last_token();
  const int64_t kept = kept_tokens >= 0 ? kept_tokens : std::numeric_limits<int64_t>::max();
  std::optional<FinishedRequest> done = scheduler_.stop_at_output(rid, index, kept, msg::FinishReason::stop_string(""));
  if (!done) return;  // gone already, or its final item comes after the last token's forward
  if (awaits_last_row)
    emit_finished({*done}, last_step_);
  else
    forget({rid, index});  // the detokenizer already sent the final reply
}

std::optional<msg::WorkerBatch> SchedulerService::next_batch() {
  if (pause_) {
    if (*pause_ == msg::PauseMode::Retract && in_flight_.empty()) {
      scheduler_.retract_running();
      pause_ = msg::PauseMode::InPlace;  // what is running from now on was queued while paused: nothing
    }
    return std::nullopt;
  }
  // A queued weight update waits for the step in flight; no new one starts before it is done.
  if (static_cast<int>(in_flight_.size()) >= scheduler_.max_batches_in_flight() || !worker_accepted() ||
      !updates_.empty() || memory_released())
    return std::nullopt;
  std::optional<ScheduledBatch> batch = scheduler_.schedule_step();
  if (!batch) return std::nullopt;
  if (tracker_) tracker_->step_scheduled(batch->step_id, batch->token_slots());
  last_step_ = batch->step_id;
  steps_sent_ = true;
  msg::WorkerBatch message = batch->to_message(tracker_.has_value(), tracker_ && options_.enable_router_weights);
  for (const StageWorker& stage : stages_) message.stage_instances.push_back(stage.accepted);
  in_flight_.emplace(batch->step_id, std::move(*batch));
  return message;
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
  StepOutcome outcome = scheduler_.process_result(flying->second, result.sampled_ids, result.logprobs,
                                                  result.sampled_counts, result.top_logprobs,
                                                  {result.prompt_logprobs, result.prompt_top_logprobs});
  const ScheduledBatch batch = std::move(flying->second);
  in_flight_.erase(flying);
  for (int32_t distinct : result.verify_experts) verify_distinct_experts_ += distinct;
  verify_layer_passes_ += static_cast<int64_t>(result.verify_experts.size());

  // The slots of each request's computed positions: the batch's, or after a verify the accepted path's.
  std::map<Key, const std::vector<int32_t>*> computed_slots;
  for (size_t i = 0; i < batch.sequences.size(); ++i)
    computed_slots[{batch.sequences[i].rid, batch.sequences[i].index}] = &batch.forward.sequences[i].kv_slots;
  for (const VerifiedSequence& v : outcome.verified) computed_slots[{v.rid, v.index}] = &v.computed_slots;
  std::map<Key, NewTokens> tokens;
  for (GeneratedToken& t : outcome.tokens) {
    NewTokens& step_tokens = tokens[{t.rid, t.index}];
    step_tokens.ids.push_back(t.token);
    step_tokens.logprobs.push_back(t.logprob);
    step_tokens.top.push_back(std::move(t.top));
    if (t.input) step_tokens.input = std::move(t.input);
  }
  std::map<Key, FinishedRequest*> finished;
  for (FinishedRequest& f : outcome.finished) finished[{f.rid, f.index}] = &f;
  for (auto& [key, new_tokens] : tokens) {
    auto fin = finished.find(key);
    if (fin != finished.end()) {
      FinishedRequest& f = *fin->second;
      emit(key, std::move(new_tokens), std::move(f.kv_slots), f.reason,
           f.cached_tokens, batch.step_id);
      finished.erase(fin);
    } else {
      emit(key, std::move(new_tokens), *computed_slots.at(key), std::nullopt, 0, batch.step_id);
    }
  }
  std::vector<FinishedRequest> rest;
  for (auto& [key, f] : finished) rest.push_back(std::move(*f));
  emit_finished(rest, batch.step_id);
}

std::vector<msg::ErrorReply> SchedulerService::fail_all(const std::string& message, int32_t code) {
  std::vector<msg::ErrorReply> errors;
  in_flight_.clear();
  scheduler_.abandon_in_flight();
  if (tracker_) tracker_->reset();
  std::vector<std::string> rids;
  for (const auto& [rid, info] : requests_) rids.push_back(rid);
  for (const std::string& rid : rids) {
    scheduler_.abort(rid, message);
    errors.push_back({rid, message, code, "scheduler", {}});
  }
  requests_.clear();
  completions_.clear();
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

void SchedulerService::emit_finished(const std::vector<FinishedRequest>& finished, uint64_t step) {
  for (const FinishedRequest& f : finished)
    emit({f.rid, f.index}, {}, f.kv_slots, f.reason, f.cached_tokens, step);
}

void SchedulerService::emit(const Key& key, NewTokens tokens, std::vector<int32_t> slots,
                            std::optional<msg::FinishReason> finish, int64_t cached_tokens, uint64_t step) {
  // The version of now: items held for their rows are built later, maybe after a weight update.
  auto build = [this, key, tokens = std::move(tokens), slots = std::move(slots),
                finish = std::move(finish), cached_tokens, version = weights_.weight_version]() {
    auto comp = completions_.find(key);
    if (comp == completions_.end()) return;  // ended meanwhile (stop string, failure)
    const RequestInfo& info = requests_.at(key.first);
    msg::DetokenizeItem item;
    item.rid = key.first;
    item.index = key.second;
    if (!comp->second.options_sent) item.options = info.options;
    comp->second.options_sent = true;
    item.new_token_ids = tokens.ids;
    if (info.options.return_logprob) item.new_logprobs = tokens.logprobs;
    if (info.options.return_logprob && info.options.top_logprobs_num > 0) item.new_top_logprobs = tokens.top;
    if (tokens.input) {
      item.input_token_ids = tokens.input->ids;
      item.input_logprobs = tokens.input->logprobs;
      item.input_top_logprobs = tokens.input->top;
    }
    const int64_t available = static_cast<int64_t>(slots.size());
    if (info.options.routing.return_routed_experts && tracker_ && available > comp->second.rows_emitted) {
      const int32_t* first = slots.data() + comp->second.rows_emitted;
      const int64_t count = available - comp->second.rows_emitted;
      item.routing = tracker_->gather(first, count, info.options.routing.return_router_weights);
      if (info.options.routing.return_draft_routed_experts) item.draft_routing = tracker_->gather_draft(first, count);
      comp->second.rows_emitted = available;
    }
    item.finish_reason = finish;
    item.prompt_tokens = info.prompt_tokens;
    item.cached_tokens = static_cast<int32_t>(cached_tokens);
    item.weight_version = version;
    output_.items.push_back(std::move(item));
    if (finish) forget(key);
  };
  const auto info = requests_.find(key.first);
  if (tracker_ && info != requests_.end() && info->second.options.routing.return_routed_experts)
    tracker_->after_rows_of(step, std::move(build));
  else
    build();
}

void SchedulerService::forget(const Key& key) {
  if (!completions_.erase(key)) return;
  auto info = requests_.find(key.first);
  if (info != requests_.end() && --info->second.live_completions == 0) requests_.erase(info);
}

}  // namespace moe
