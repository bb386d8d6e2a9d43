#include "pipeline/rank_group.h"

#include <spdlog/spdlog.h>
#include <tuple>

#include "common/error.h"
#include "pipeline/rank_processes.h"
#include "serving/worker_settings.h"
#include "transport/message_codec.h"

namespace moe::actors {
namespace {

// A collective waits this long for the other ranks' parts: they compute the same layers at once.
constexpr std::chrono::seconds kCollectiveTimeout(60);

// "expert-parallel rank 1", "tensor-parallel rank 0", or with both kinds "rank 3 (expert-parallel rank 1,
// tensor-parallel rank 1)": rank r of the group is expert-parallel rank r / tp_size, tensor-parallel rank
// r % tp_size.
std::string rank_name(int rank, int tp_size, int ep_size) {
  if (tp_size == 1) return "expert-parallel rank " + std::to_string(rank);
  if (ep_size == 1) return "tensor-parallel rank " + std::to_string(rank);
  return "rank " + std::to_string(rank) + " (expert-parallel rank " + std::to_string(rank / tp_size) +
         ", tensor-parallel rank " + std::to_string(rank % tp_size) + ")";
}

}  // namespace

bool ranks_in_processes(const ServeOptions& options) {
  return (options.ep_size > 1 || options.tp_size > 1) && (!options.dist_init_addr.empty() || !options.rank_command.empty());
}

RankGroup::RankGroup(const ServeOptions& options, transport::Context& context)
    : options_(options),
      tensor_parallel_(options.tp_size > 1),
      rank_(options.ep_rank * options.tp_size + options.tp_rank),
      size_(options.ep_size * options.tp_size) {
  const std::string flag = tensor_parallel_ ? "--tp" : "--ep";
  for (const auto& [dimension, rank, ranks] : {std::tuple{"--ep", options.ep_rank, options.ep_size},
                                               std::tuple{"--tp", options.tp_rank, options.tp_size}})
    if (rank < 0 || rank >= ranks)
      throw Error(std::string(dimension) + "-rank must lie in [0, " + dimension + "-size), got " + std::to_string(rank));
  if (options.pp_size > 1) throw Error(flag + "-size ranks in processes of their own run without --pp-size");
  if (!options.speculative_algorithm.empty())
    throw Error("--speculative-algorithm runs without " + flag + "-size ranks in processes of their own");
  if (rank_ > 0 && options.dist_init_addr.empty())
    throw Error(name() + " needs --dist-init-addr, the endpoint rank 0 binds (tcp://HOST:PORT)");
  collective::GroupOptions group;
  // Ranks this process starts meet on one host, at a socket file of ZeroMQ's choosing.
  group.endpoint = options.dist_init_addr.empty() ? "ipc://*" : options.dist_init_addr;
  group.context = &context;
  group.rank = rank_;
  group.size = size_;
  const int tp_size = options.tp_size, ep_size = options.ep_size;
  group.member_name = [tp_size, ep_size](int rank) { return rank_name(rank, tp_size, ep_size); };
  group.timeout = kCollectiveTimeout;
  comm_ = std::make_unique<collective::HostCommunicator>(group);
  if (rank_ == 0 && !options.rank_command.empty())
    processes_ = std::make_unique<RankProcesses>(options.rank_command, size_, comm_->endpoint(), [tp_size](int rank) {
      return std::vector<std::string>{"--ep-rank", std::to_string(rank / tp_size), "--tp-rank",
                                      std::to_string(rank % tp_size)};
    });
}

RankGroup::~RankGroup() = default;

Communicator& RankGroup::communicator() { return *comm_; }

std::string RankGroup::name() const { return rank_name(rank_, options_.tp_size, options_.ep_size); }

void RankGroup::join(const msg::WorkerSettings& settings, const std::string& model_path) {
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
  spdlog::info("{} of {} joined the group at {}", name(), size_, comm_->endpoint());
}

void RankGroup::share(const msg::WorkerBatch& batch) {
  std::string step = transport::encode_message(batch);
  comm_->broadcast(step);
}

void RankGroup::follow(ModelWorker& worker, const std::function<bool()>& keep_running) {
  std::string step;
  while (comm_->broadcast(step, keep_running)) {
    msg::Message message = transport::decode_message(step);
    const auto* batch = std::get_if<msg::WorkerBatch>(&message);
    if (!batch) throw Error(name() + " received no step from rank 0");
    worker.execute(*batch);
  }
}

}  // namespace moe::actors
