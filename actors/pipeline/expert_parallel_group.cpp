#include "pipeline/expert_parallel_group.h"

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "pipeline/rank_processes.h"
#include "serving/worker_settings.h"
#include "transport/message_codec.h"

namespace moe::actors {
namespace {

// A collective waits this long for the other ranks' parts: they compute the same layers at once.
constexpr std::chrono::seconds kCollectiveTimeout(60);

}  // namespace

bool expert_ranks_in_processes(const ServeOptions& options) {
  return options.ep_size > 1 && (!options.dist_init_addr.empty() || !options.rank_command.empty());
}

ExpertParallelGroup::ExpertParallelGroup(const ServeOptions& options, transport::Context& context) : options_(options) {
  if (options.ep_rank < 0 || options.ep_rank >= options.ep_size)
    throw Error("--ep-rank must lie in [0, --ep-size), got " + std::to_string(options.ep_rank));
  if (options.pp_size > 1) throw Error("expert-parallel ranks in processes of their own run without --pp-size");
  if (!options.speculative_algorithm.empty())
    throw Error("--speculative-algorithm runs without expert-parallel ranks in processes of their own");
  if (options.ep_rank > 0 && options.dist_init_addr.empty())
    throw Error("expert-parallel rank " + std::to_string(options.ep_rank) +
                " needs --dist-init-addr, the endpoint rank 0 binds (tcp://HOST:PORT)");
  collective::GroupOptions group;
  // Ranks this process starts meet on one host, at a socket file of ZeroMQ's choosing.
  group.endpoint = options.dist_init_addr.empty() ? "ipc://*" : options.dist_init_addr;
  group.context = &context;
  group.rank = options.ep_rank;
  group.size = options.ep_size;
  group.name = "expert-parallel rank";
  group.timeout = kCollectiveTimeout;
  comm_ = std::make_unique<collective::HostCommunicator>(group);
  if (options.ep_rank == 0 && !options.rank_command.empty())
    processes_ = std::make_unique<RankProcesses>(options.rank_command, options.ep_size, comm_->endpoint());
}

ExpertParallelGroup::~ExpertParallelGroup() = default;

Communicator& ExpertParallelGroup::communicator() { return *comm_; }

void ExpertParallelGroup::join(const msg::WorkerSettings& settings, const std::string& model_path) {
  collective::JoinOptions join;
  join.hello = transport::encode_message(msg::Heartbeat{0, settings});
  join.check = [settings, model_path](int, const std::string& hello) {
    const msg::Message theirs = transport::decode_message(hello);
    const auto* heartbeat = std::get_if<msg::Heartbeat>(&theirs);
    if (!heartbeat) return std::string("it sent no settings");
    return settings_mismatch(settings, heartbeat->settings, {model_path}).value_or("");
  };
  join.timeout = std::chrono::seconds(options_.dist_timeout_s);
  comm_->join(join);
  spdlog::info("expert-parallel rank {} of {} joined the group at {}", options_.ep_rank, options_.ep_size,
               comm_->endpoint());
}

void ExpertParallelGroup::share(const msg::WorkerBatch& batch) {
  std::string step = transport::encode_message(batch);
  comm_->broadcast(step);
}

void ExpertParallelGroup::follow(ModelWorker& worker, const std::function<bool()>& keep_running) {
  std::string step;
  while (comm_->broadcast(step, keep_running)) {
    msg::Message message = transport::decode_message(step);
    const auto* batch = std::get_if<msg::WorkerBatch>(&message);
    if (!batch) throw Error("expert-parallel rank " + std::to_string(options_.ep_rank) + " received no step from rank 0");
    worker.execute(*batch);
  }
}

}  // namespace moe::actors
