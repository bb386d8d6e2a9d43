#pragma once
// The scheduler actor: requests and aborts in from the tokenizer, steps out to the model worker and
// its results back, detokenizer items out. One step is in flight at a time (one per stage with
// pipeline parallelism, each stage sending its own heartbeats and routing rows); the next is planned
// the moment a result arrives. A weight update from the tokenizer goes to the worker between two steps,
// and its answer back to the tokenizer. A worker that stops sending heartbeats fails every live
// request (and weight update).
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/server_stats.h"
#include "serving/scheduler_service.h"
#include "transport/actor_loop.h"

namespace moe::transport {
class Outbox;
}

namespace moe::actors {

// What the scheduler knows for /metrics, read on its own loop.
struct SchedulerSnapshot {
  SchedulerStats stats;
  api::Histogram step_time_seconds = api::step_time_histogram();
  uint64_t capture_bytes_total = 0;
  int64_t capture_host_cache_bytes = 0;
  std::string worker_problem;  // why no step can run now; empty when a worker is accepted and answering
  ServingWeights weights;      // what the worker serves (changed by weight updates)
  std::optional<msg::WorkerSettings> worker_settings;  // what the accepted worker reported; none without one
};

struct SchedulerActorEndpoints {
  std::string inbox, worker, detokenizer, tokenizer;
};

class SchedulerActor {
 public:
  SchedulerActor(transport::ActorLoop& loop, std::unique_ptr<SchedulerService> service,
                 const SchedulerActorEndpoints& endpoints, std::chrono::milliseconds worker_timeout);
  ~SchedulerActor();
  // On the loop's thread: the scheduler's counters (tests and stats endpoints read them).
  SchedulerStats stats() const { return service_->stats(); }
  SchedulerSnapshot snapshot() const;
  // The expert-load counts, zeroed right after the read when `reset` (nothing counts in between:
  // both happen in this one call on the loop); none without routed-experts capture.
  std::optional<api::ExpertLoad> expert_load(bool reset);
  // Evicts every cached prefix no running request uses; returns the cached tokens evicted.
  int64_t flush_cache();
  // Pauses generation (SchedulerService::pause_generation) or resumes it, planning steps at once.
  void pause_generation(msg::PauseMode mode);
  void continue_generation();
  // The label replies carry (SchedulerService::set_weight_version).
  std::string weight_version() const { return service_->weights().weight_version; }
  void set_weight_version(std::string version);
  // Logs SGLang's stats line (#running-req, #queue-req, token usage, gen throughput) every `steps`
  // steps that generate tokens (--decode-log-interval); 0 turns it off.
  void log_stats_every(int steps) { stats_interval_ = steps; }

 private:
  void on_message(msg::Message&& message);
  void on_tokenized(const msg::TokenizedRequest& request);
  void on_abort(const msg::Abort& abort);
  // Every message from the worker: notes that it is alive, and whether it is the worker whose KV
  // cache this scheduler has been filling. False: a restarted worker, whose message is dropped
  // (every live request has failed and the prefix cache was cleared).
  bool heard_from_worker(uint64_t instance);
  void on_heartbeat(const msg::Heartbeat& heartbeat);
  void send_errors(std::vector<msg::ErrorReply> errors);
  void on_result(const msg::WorkerResult& result);
  void on_routing(const std::vector<msg::StepRouting>& routing);
  void on_weights_updated(const msg::WeightsUpdated& answer);
  void count_capture_bytes(const std::vector<msg::StepRouting>& routing);
  // Sends out what the service produced and, when no step is in flight, plans and sends the next.
  void pump();
  void fail_all(const std::string& message, int32_t code = 500);
  // Why no step can run now (see SchedulerSnapshot::worker_problem).
  std::string worker_problem() const;
  // Why requests are refused now: a refused worker, or one silent past worker_timeout (also one
  // that never connected since start); empty while one answers, or may still connect.
  std::string worker_unusable() const;
  // The first pipeline stage not heard from for worker_timeout, if any.
  std::optional<int> silent_stage() const;
  // The error naming the silent stage's worker, how long it has been silent and the timeout.
  std::string stopped_responding(int stage) const;
  void watch_worker();

  std::unique_ptr<SchedulerService> service_;
  std::string worker_name_;  // "the model worker", with its endpoint when it is another process
  transport::Outbox* to_worker_ = nullptr;
  transport::Outbox* to_detokenizer_ = nullptr;
  transport::Outbox* to_tokenizer_ = nullptr;
  std::chrono::milliseconds worker_timeout_;
  std::vector<std::chrono::steady_clock::time_point> last_heard_;  // per pipeline stage
  std::map<uint64_t, std::chrono::steady_clock::time_point> step_sent_;
  std::chrono::steady_clock::time_point last_result_at_;
  api::Histogram step_time_seconds_ = api::step_time_histogram();
  uint64_t capture_bytes_total_ = 0;
  // The periodic stats line: every stats_interval_ steps that generated tokens (0 = never), with
  // the tokens generated since it was last logged, and when that was.
  int stats_interval_ = 40;
  int steps_since_stats_ = 0;
  uint64_t tokens_since_stats_ = 0;
  std::chrono::steady_clock::time_point stats_logged_ = std::chrono::steady_clock::now();
  void count_for_stats(size_t tokens);
  struct Timer;
  std::unique_ptr<Timer> timer_;
};

}  // namespace moe::actors
