#include "common/prelude.h"

#include "pipeline/scheduler_actor.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "common/error.h"
#include "moe/enum_names.h"
#include "transport/endpoints.h"

namespace moe::actors {

struct SchedulerActor::Timer {
  explicit Timer(boost::asio::io_context& io) : timer(io) {}
  boost::asio::steady_timer timer;
};

SchedulerActor::SchedulerActor(transport::ActorLoop& loop, std::unique_ptr<SchedulerService> service,
                               const SchedulerActorEndpoints& endpoints, std::chrono::milliseconds worker_timeout)
    : service_(std::move(service)),
      worker_name_(endpoints.worker.rfind("inproc://", 0) == 0 ? "the model worker"
                                                               : "the model worker at " + endpoints.worker),
      worker_timeout_(worker_timeout),
      last_heard_(static_cast<size_t>(service_->num_stages()), std::chrono::steady_clock::now()),
      timer_(std::make_unique<Timer>(loop.io())) {
  to_worker_ = &loop.make<transport::Outbox>(endpoints.worker);
  to_detokenizer_ = &loop.make<transport::Outbox>(endpoints.detokenizer);
  to_tokenizer_ = &loop.make<transport::Outbox>(endpoints.tokenizer);
  loop.make<transport::Inbox>(endpoints.inbox, [this](msg::Message&& message) { on_message(std::move(message)); });
  loop.post([this] { watch_worker(); });
}

SchedulerActor::~SchedulerActor() = default;

void SchedulerActor::on_message(msg::Message&& message) {
  if (auto* request = std::get_if<msg::TokenizedRequest>(&message)) {
    on_tokenized(*request);
  } else if (auto* abort = std::get_if<msg::Abort>(&message)) {
    on_abort(*abort);
  } else if (auto* result = std::get_if<msg::WorkerResult>(&message)) {
    if (heard_from_worker(result->worker_instance)) on_result(*result);
  } else if (auto* update = std::get_if<msg::RoutingUpdate>(&message)) {
    if (heard_from_worker(update->worker_instance)) on_routing(update->routing);
  } else if (auto* heartbeat = std::get_if<msg::Heartbeat>(&message)) {
    on_heartbeat(*heartbeat);
  } else if (auto* update = std::get_if<msg::UpdateWeights>(&message)) {
    if (update->group.action != msg::WeightGroupAction::None)
      spdlog::info("scheduler: a call on weight group '{}' asked; pausing new steps", update->group.group_name);
    else if (update->memory == msg::MemoryAction::None)
      spdlog::info("scheduler: weight update to {} asked; pausing new steps", update->model_path);
    else
      spdlog::info("scheduler: memory {} asked (weights: {}, kv_cache: {}); pausing new steps",
                   update->memory == msg::MemoryAction::Release ? "release" : "resume", update->weights_tag,
                   update->kv_cache_tag);
    service_->update_weights(*update);
  } else if (auto* answer = std::get_if<msg::WeightsUpdated>(&message)) {
    if (heard_from_worker(answer->worker_instance)) on_weights_updated(*answer);
  } else if (auto* error = std::get_if<msg::ErrorReply>(&message)) {
    fail_all(error->message);
  } else {
    spdlog::warn("scheduler: ignoring a {} message", msg::kind_name(msg::kind_of(message)));
  }
  pump();
}

bool SchedulerActor::heard_from_worker(uint64_t instance) {
  std::vector<msg::ErrorReply> errors;
  if (service_->from_accepted_worker(instance, errors)) {
    last_heard_[*service_->stage_of(instance)] = std::chrono::steady_clock::now();
    return true;
  }
  spdlog::error("scheduler: a step was answered by model worker {:x}, not the one it was sent to (it restarted); "
                "{} live request(s) fail and the prefix cache is cleared",
                instance, errors.size());
  send_errors(std::move(errors));
  return false;
}

void SchedulerActor::on_heartbeat(const msg::Heartbeat& heartbeat) {
  const int rank = heartbeat.settings.pp_rank;
  if (rank >= 0 && rank < service_->num_stages()) last_heard_[rank] = std::chrono::steady_clock::now();
  const bool was_accepted = service_->worker_accepted();
  const std::string old_refusal = service_->worker_refusal();
  std::vector<msg::ErrorReply> errors = service_->on_heartbeat(heartbeat);
  if (!errors.empty())
    spdlog::error("scheduler: model worker {:x} restarted; its KV cache is empty, so {} live request(s) fail and "
                  "the prefix cache is cleared",
                  heartbeat.instance, errors.size());
  if (service_->worker_refusal() != old_refusal && !service_->worker_refusal().empty())
    spdlog::error("scheduler: refusing model worker {:x}: {}", heartbeat.instance, service_->worker_refusal());
  else if (service_->worker_accepted() && !was_accepted)
    spdlog::info("scheduler: model worker {:x} connected{}", heartbeat.instance,
                 service_->num_stages() > 1 ? " (the last pipeline stage to come)" : "");
  send_errors(std::move(errors));
}

void SchedulerActor::send_errors(std::vector<msg::ErrorReply> errors) {
  for (msg::ErrorReply& error : errors) to_tokenizer_->send(std::move(error));
}

void SchedulerActor::on_result(const msg::WorkerResult& result) {
  const auto now = std::chrono::steady_clock::now();
  if (auto sent = step_sent_.find(result.step); sent != step_sent_.end()) {
    // A step sent while another ran (overlap, pipeline stages) waited behind it: its time starts
    // when the one before it came back.
    step_time_seconds_.observe(std::chrono::duration<double>(now - std::max(sent->second, last_result_at_)).count());
    step_sent_.erase(sent);
  }
  last_result_at_ = now;
  count_capture_bytes(result.routing);
  count_for_stats(result.sampled_ids.size());
  if (!service_->step_in_flight(result.step)) {
    spdlog::warn("scheduler: dropping the result of step {}, abandoned after a worker failure", result.step);
    return;
  }
  try {
    service_->on_worker_result(result);  // stores the rows that rode along too
  } catch (const Error& e) {
    // Its requests cannot go on (their tokens are unknown): fail them all rather than leave them waiting.
    fail_all(std::string("the model worker's result does not fit its step: ") + e.what());
  }
}

void SchedulerActor::on_routing(const std::vector<msg::StepRouting>& routing) {
  count_capture_bytes(routing);
  service_->on_routing(routing);
}

void SchedulerActor::on_weights_updated(const msg::WeightsUpdated& answer) {
  service_->on_weights_updated(answer);
  if (!msg::loads_weights(answer.request)) {
    if (answer.success)
      spdlog::info("scheduler: {}; generation {}", answer.message,
                   service_->memory_released() ? "waits for resume_memory_occupation" : "goes on");
    else
      spdlog::error("scheduler: {}", answer.message);
    return;
  }
  if (answer.success && !answer.request.weight_version)
    spdlog::warn("scheduler: new weights from {} keep the old weight version label '{}': the update gave no "
                 "weight_version, so replies cannot tell them from the weights before",
                 service_->weights().model_path, service_->weights().weight_version);
  else if (answer.success)
    spdlog::info("scheduler: serving weight version '{}' from {}", service_->weights().weight_version,
                 service_->weights().model_path);
  else
    spdlog::error("scheduler: weight update failed, the old weights keep serving: {}", answer.message);
}

void SchedulerActor::count_capture_bytes(const std::vector<msg::StepRouting>& routing) {
  for (const msg::StepRouting& step : routing)
    capture_bytes_total_ += step.rows.expert_ids.size() * sizeof(int16_t) + step.rows.weights.size() * sizeof(float);
}

SchedulerSnapshot SchedulerActor::snapshot() const {
  return {service_->stats(), step_time_seconds_, capture_bytes_total_, service_->host_cache_bytes(), worker_problem(),
          service_->weights(), service_->accepted_settings()};
}

void SchedulerActor::count_for_stats(size_t tokens) {
  if (stats_interval_ <= 0 || tokens == 0) return;  // an idle server stays quiet
  tokens_since_stats_ += tokens;
  if (++steps_since_stats_ < stats_interval_) return;
  const auto now = std::chrono::steady_clock::now();
  const SchedulerStats stats = service_->stats();
  spdlog::info("{}", api::periodic_stats_line({stats.num_running, stats.num_waiting, stats.kv_slots_used,
                                               stats.kv_slots_total, tokens_since_stats_,
                                               std::chrono::duration<double>(now - stats_logged_).count()}));
  steps_since_stats_ = 0;
  tokens_since_stats_ = 0;
  stats_logged_ = now;
}

std::string SchedulerActor::worker_problem() const {
  if (!service_->worker_refusal().empty()) return worker_name_ + " was refused: " + service_->worker_refusal();
  if (!service_->worker_accepted() && !silent_stage())
    return service_->num_stages() > 1 ? "not every pipeline stage's model worker is connected"
                                      : "no model worker is connected";
  if (std::optional<int> stage = silent_stage()) return stopped_responding(*stage);
  return {};
}

std::string SchedulerActor::worker_unusable() const {
  if (service_->worker_refusal().empty() && !silent_stage()) return {};
  return worker_problem();
}

std::optional<int> SchedulerActor::silent_stage() const {
  const auto now = std::chrono::steady_clock::now();
  for (size_t rank = 0; rank < last_heard_.size(); ++rank)
    if (now - last_heard_[rank] > worker_timeout_) return static_cast<int>(rank);
  return std::nullopt;
}

std::string SchedulerActor::stopped_responding(int stage) const {
  const double silent_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_heard_[static_cast<size_t>(stage)]).count();
  const std::string who = service_->num_stages() > 1 && stage > 0
                              ? "the model worker of pipeline stage " + std::to_string(stage)
                              : worker_name_ + (service_->num_stages() > 1 ? " (pipeline stage 0)" : "");
  const std::string what = service_->stage_has_worker(stage) ? " stopped responding" : " has not connected";
  return fmt::format("{}{}: nothing heard from it for {:.1f} s (--worker-timeout-ms {})", who, what, silent_s,
                     worker_timeout_.count());
}

std::optional<api::ExpertLoad> SchedulerActor::expert_load(bool reset) {
  api::ExpertLoad load{service_->expert_load(), service_->expert_load_tokens()};
  if (load.counts.empty()) return std::nullopt;
  if (reset) service_->reset_expert_load();
  return load;
}

int64_t SchedulerActor::flush_cache() {
  const int64_t cached = service_->stats().radix_cached_tokens;
  service_->flush_cache();
  return cached - service_->stats().radix_cached_tokens;
}

void SchedulerActor::pause_generation(msg::PauseMode mode) {
  spdlog::info("scheduler: generation paused ({})", msg::name_of(mode));
  service_->pause_generation(mode);
  pump();  // retracts at once when no step is in flight
}

void SchedulerActor::continue_generation() {
  if (service_->generation_paused()) spdlog::info("scheduler: generation continues");
  service_->continue_generation();
  pump();
}

void SchedulerActor::set_weight_version(std::string version) {
  spdlog::info("scheduler: weight version relabelled from '{}' to '{}'", service_->weights().weight_version, version);
  service_->set_weight_version(std::move(version));
}

void SchedulerActor::on_tokenized(const msg::TokenizedRequest& request) {
  // Refused at once rather than queued for a worker that may never answer: the client can retry
  // elsewhere, and the request never waits behind a silent or refused worker.
  if (const std::string problem = worker_unusable(); !problem.empty()) {
    to_tokenizer_->send(msg::ErrorReply{request.rid, problem, 503, "scheduler", {}});
    return;
  }
  if (auto error = service_->add_request(request)) to_tokenizer_->send(*error);
}

void SchedulerActor::on_abort(const msg::Abort& abort) {
  if (abort.stop_string)
    service_->finish_by_stop_string(abort.rid, abort.index, abort.kept_tokens);
  else
    service_->abort(abort.rid, abort.reason);
}

void SchedulerActor::pump() {
  msg::DetokenizeBatch items = service_->take_output();
  if (!items.items.empty()) to_detokenizer_->send(items);
  bool sent_step = false;
  // Up to one micro-batch per pipeline stage in flight.
  while (auto batch = service_->next_batch()) {
    step_sent_[batch->step] = std::chrono::steady_clock::now();
    to_worker_->send(*batch);
    sent_step = true;
  }
  if (!sent_step) {
    if (auto update = service_->next_weight_update()) {
      to_worker_->send(*update);
    }
  }
  for (msg::WeightsUpdated& answer : service_->take_weight_update_answers()) to_tokenizer_->send(answer);
}

void SchedulerActor::fail_all(const std::string& message, int32_t code) {
  spdlog::error("scheduler: failing every live request: {}", message);
  step_sent_.clear();
  send_errors(service_->fail_all(message, code));
}

// Every half second: no word from a worker (its heartbeats come every half second, from a thread
// of their own, busy or not) for worker_timeout means it is gone (killed, stopped, or its host
// unreachable); requests get an error instead of hanging. Silence is measured from the last
// message only, never from the last step sent: a step sent to a frozen worker is no sign of life.
void SchedulerActor::watch_worker() {
  const std::optional<int> silent_rank = silent_stage();
  const bool silent = silent_rank.has_value();
  if (silent && service_->batch_in_flight()) {
    fail_all(stopped_responding(*silent_rank));
  } else if (silent && service_->has_weight_updates() && service_->worker_accepted()) {
    // A worker that stopped while loading may never answer; it may yet (its answer is applied).
    service_->fail_weight_updates(stopped_responding(*silent_rank));
  } else if (const std::string problem = worker_unusable();
             !problem.empty() && (service_->has_unfinished() || service_->has_weight_updates())) {
    // Requests and updates would wait for a worker that may never come.
    service_->fail_weight_updates(problem);
    fail_all(problem, 503);
  }
  pump();
  timer_->timer.expires_after(std::chrono::milliseconds(500));
  timer_->timer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) watch_worker();
  });
}

}  // namespace moe::actors
