#include "common/prelude.h"

#include "pipeline/worker_actor.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "common/error.h"
#include "pipeline/rank_group.h"
#include "transport/endpoints.h"

namespace moe::actors {

// How often the worker process says it is alive; the scheduler fails requests after a few misses.
constexpr auto kHeartbeatPeriod = std::chrono::milliseconds(500);

struct WorkerActor::Timer {
  explicit Timer(boost::asio::io_context& io) : timer(io) {}
  boost::asio::steady_timer timer;
};

WorkerActor::WorkerActor(transport::ActorLoop& loop, transport::ActorLoop& heartbeat_loop, std::unique_ptr<Model> model,
                         ModelWorkerOptions options, const std::string& inbox_endpoint,
                         const std::string& scheduler_endpoint, const std::string& next_stage_endpoint,
                         RankGroup* rank_group)
    : loop_(loop), heartbeat_loop_(heartbeat_loop), rank_group_(rank_group) {
  // The copy thread finishes a step's rows: hand them out from the worker's own loop.
  options.on_routing_ready = [this] { loop_.post([this] { send_ready_routing(); }); };
  worker_ = std::make_unique<ModelWorker>(std::move(model), options);
  results_ = &loop.make<transport::Outbox>(scheduler_endpoint);
  if (!worker_->last_stage() && next_stage_endpoint.empty())
    throw Error("pipeline stage " + std::to_string(worker_->pp_rank()) +
                " is not the last: it needs the next stage's endpoint (--pp-next-endpoint)");
  if (!worker_->last_stage()) next_stage_ = &loop.make<transport::Outbox>(next_stage_endpoint);
  loop.make<transport::StageInbox>(inbox_endpoint, [this](msg::Message&& message,
                                                          std::optional<transport::ReceivedFrame>&& activations) {
    if (auto* batch = std::get_if<msg::WorkerBatch>(&message)) return on_batch(*batch, std::move(activations));
    if (auto* update = std::get_if<msg::UpdateWeights>(&message)) return on_update_weights(*update);
    spdlog::warn("worker: ignoring a {} message", msg::kind_name(msg::kind_of(message)));
  });
  heartbeat_ = &heartbeat_loop.make<transport::Outbox>(scheduler_endpoint);
  timer_ = std::make_unique<Timer>(heartbeat_loop.io());
  heartbeat_loop.post([this] { schedule_heartbeat(); });
}

WorkerActor::~WorkerActor() = default;

bool WorkerActor::meant_for_this_worker(uint64_t instance, const char* what) const {
  if (instance == worker_->instance()) return true;
  spdlog::warn("worker: dropping {} meant for worker {:x} (this is {:x})", what, instance, worker_->instance());
  return false;
}

void WorkerActor::on_batch(const msg::WorkerBatch& batch, std::optional<transport::ReceivedFrame>&& activations) {
  const auto rank = static_cast<size_t>(worker_->pp_rank());
  if (!meant_for_this_worker(rank < batch.stage_instances.size() ? batch.stage_instances[rank] : 0, "a step")) return;
  try {
    if (rank_group_) rank_group_->share(batch);
    if (worker_->whole_model())
      results_->send(worker_->execute(batch));
    else
      run_stage(batch, std::move(activations));
  } catch (const std::exception& e) {
    spdlog::error("worker: step {} failed: {}", batch.step, e.what());
    results_->send(msg::ErrorReply{"", std::string("model worker failed: ") + e.what(), 500, "worker", {}});
  }
}

void WorkerActor::run_stage(const msg::WorkerBatch& batch, std::optional<transport::ReceivedFrame>&& activations) {
  const size_t bytes = batch.token_ids.size() * worker_->config().hidden_size * sizeof(float);
  float* hidden = nullptr;
  if (activations) {
    if (activations->size() != bytes)
      throw Error("pipeline stage " + std::to_string(worker_->pp_rank()) + " received " +
                  std::to_string(activations->size()) + " bytes of activations for a step that needs " +
                  std::to_string(bytes));
    hidden = reinterpret_cast<float*>(activations->data());  // computed in place, in ZeroMQ's buffer
  } else {
    if (worker_->pp_rank() != 0) throw Error("a later pipeline stage received a step without activations");
    hidden_.resize(bytes / sizeof(float));
    hidden = hidden_.data();
  }
  if (std::optional<msg::WorkerResult> result = worker_->execute_stage(batch, hidden))
    results_->send(*result);
  else
    next_stage_->send(batch, std::string_view(reinterpret_cast<const char*>(hidden), bytes));
}

// Runs on the worker's loop, which blocks for the load; the heartbeat's own loop keeps telling the
// scheduler the process is alive meanwhile.
void WorkerActor::on_update_weights(const msg::UpdateWeights& update) {
  if (!meant_for_this_worker(update.worker_instance, "a weight update")) return;
  if (rank_group_) {
    const std::string refusal =
        update.group.action != msg::WeightGroupAction::None
            ? "weight groups (init_weights_update_group) are not supported with expert- or tensor-parallel ranks in "
              "processes of their own"
        : update.memory == msg::MemoryAction::None
            ? "update_weights_from_disk is not supported with expert- or tensor-parallel ranks in processes of "
              "their own: restart every rank on the new checkpoint"
            : "release_memory_occupation and resume_memory_occupation are not supported with expert- or "
              "tensor-parallel ranks in processes of their own";
    results_->send(msg::WeightsUpdated{update, false, refusal, 0, "", worker_->instance()});
    return;
  }
  if (!msg::loads_weights(update) || update.group.action != msg::WeightGroupAction::None) {
    msg::WeightsUpdated answer = worker_->update_weights(update);
    spdlog::info("worker: {}", answer.message);
    results_->send(answer);
    return;
  }
  spdlog::info("worker: loading new weights from {}", update.model_path);
  msg::WeightsUpdated answer = worker_->update_weights(update);
  if (answer.success)
    spdlog::info("worker: now serving the weights of {}", update.model_path);
  else
    spdlog::error("worker: {}", answer.message);
  results_->send(answer);
}

void WorkerActor::send_ready_routing() {
  auto routing = worker_->take_ready_routing();
  if (routing.empty()) return;
  results_->send(msg::RoutingUpdate{std::move(routing), worker_->instance()});
}

void WorkerActor::schedule_heartbeat() {
  heartbeat_->send(worker_->heartbeat());
  timer_->timer.expires_after(kHeartbeatPeriod);
  timer_->timer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) schedule_heartbeat();
  });
}

}  // namespace moe::actors
