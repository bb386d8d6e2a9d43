#pragma once
// The model-worker actor: WorkerBatch in, WorkerResult out; routing rows whose copy finishes while
// the worker is idle go out on their own; UpdateWeights in, WeightsUpdated out. A heartbeat loop on its own thread tells the scheduler the
// process is alive even during a long forward.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/actor_loop.h"
#include "transport/async_socket.h"
#include "worker/model_worker.h"

namespace moe::transport {
class Outbox;
}

namespace moe::actors {

class RankGroup;

class WorkerActor {
 public:
  // Builds its sockets on `loop` (inbox bound at inbox_endpoint, results to scheduler_endpoint) and
  // its heartbeat on `heartbeat_loop`; run both loops afterwards.
  // `next_stage_endpoint`: the next pipeline stage's inbox; empty for the last stage (or the whole model).
  // `rank_group`: rank 0 of expert- or tensor-parallel ranks in other processes, to which each step is handed
  // before it is computed (null: none; not owned).
  WorkerActor(transport::ActorLoop& loop, transport::ActorLoop& heartbeat_loop, std::unique_ptr<Model> model,
              ModelWorkerOptions options, const std::string& inbox_endpoint, const std::string& scheduler_endpoint,
              const std::string& next_stage_endpoint = {}, RankGroup* rank_group = nullptr);
  ~WorkerActor();

 private:
  // A restarted worker must not run what was planned for its predecessor (over KV it does not hold):
  // false, logged, for a message addressed to another instance (a step: to this stage's rank).
  bool meant_for_this_worker(uint64_t instance, const char* what) const;
  void on_batch(const msg::WorkerBatch& batch, std::optional<transport::ReceivedFrame>&& activations);
  // A pipeline stage's share of the step (throws moe::Error when the activations do not fit the batch).
  void run_stage(const msg::WorkerBatch& batch, std::optional<transport::ReceivedFrame>&& activations);
  void on_update_weights(const msg::UpdateWeights& update);
  void send_ready_routing();
  void schedule_heartbeat();

  transport::ActorLoop& loop_;
  transport::ActorLoop& heartbeat_loop_;
  std::unique_ptr<ModelWorker> worker_;
  transport::Outbox* results_ = nullptr;
  transport::Outbox* next_stage_ = nullptr;  // null for the last stage
  RankGroup* rank_group_ = nullptr;
  std::vector<float> hidden_;                // the first stage's activations
  transport::Outbox* heartbeat_ = nullptr;
  struct Timer;
  std::unique_ptr<Timer> timer_;
};

}  // namespace moe::actors
