#include "pipeline/rank_group.h"

#include <spdlog/spdlog.h>
#include <cstring>
#include <tuple>

#include "common/error.h"
#include "pipeline/rank_processes.h"
#include "pipeline/visible_gpus.h"
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

// What rank 0 hands every other rank at the join: its settings, then a GPU group's id.
std::string welcome_of(const msg::WorkerSettings& settings, const std::string& device_group_id) {
  const std::string encoded = transport::encode_message(msg::Heartbeat{0, settings});
  const auto size = static_cast<uint32_t>(encoded.size());
  std::string welcome(reinterpret_cast<const char*>(&size), sizeof size);
  return welcome + encoded + device_group_id;
}

std::pair<msg::WorkerSettings, std::string> parse_welcome(const std::string& welcome) {
  uint32_t size = 0;
  if (welcome.size() < sizeof size) throw Error("rank 0's welcome is truncated");
  std::memcpy(&size, welcome.data(), sizeof size);
  if (welcome.size() < sizeof size + size) throw Error("rank 0's welcome is truncated");
  const msg::Message message = transport::decode_message(welcome.substr(sizeof size, size));
  const auto* heartbeat = std::get_if<msg::Heartbeat>(&message);
  if (!heartbeat) throw Error("rank 0's welcome holds no settings");
  return {heartbeat->settings, welcome.substr(sizeof size + size)};
}

}  // namespace

bool ranks_in_processes(const ServeOptions& options) {
  return (options.ep_size > 1 || options.tp_size > 1) && (!options.dist_init_addr.empty() || !options.rank_command.empty());
}

RankGroup::RankGroup(const ServeOptions& options, transport::Context& context)
    : options_(options),
      gpu_ranks_(parse_device(options.device) == Device::Cuda),
      tensor_parallel_(options.tp_size > 1 || gpu_ranks_),
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
  if (gpu_ranks_ && rank_ == 0) {
    if (!device_group_backend().new_group_id)
      throw Error("GPU ranks join an NCCL group, and this program was built without NCCL (no nccl.h found)");
    device_group_id_ = device_group_backend().new_group_id();
  }
  comm_ = std::make_unique<collective::HostCommunicator>(group);
  if (rank_ > 0 || options.rank_command.empty()) return;
  // A GPU rank this process starts gets the rank-th GPU of this one's as its only one (rank 0 uses the first).
  std::vector<std::string> gpus;
  if (gpu_ranks_) {
    gpus = visible_gpus();
    if (static_cast<int>(gpus.size()) < size_)
      throw Error(std::to_string(size_) + " GPU ranks (--tp-size " + std::to_string(tp_size) + " × --ep-size " +
                  std::to_string(ep_size) + ") need as many GPUs; this process sees " + std::to_string(gpus.size()));
  }
  processes_ = std::make_unique<RankProcesses>(
      options.rank_command, size_, comm_->endpoint(),
      [tp_size](int rank) {
        return std::vector<std::string>{"--ep-rank", std::to_string(rank / tp_size), "--tp-rank",
                                        std::to_string(rank % tp_size)};
      },
      [gpus](int rank) {
        return gpus.empty() ? std::vector<std::string>{} : std::vector<std::string>{"CUDA_VISIBLE_DEVICES=" + gpus[rank]};
      });
}

std::function<std::unique_ptr<DeviceGroup>(void*)> RankGroup::device_group_join() {
  if (!gpu_ranks_) return nullptr;
  return [this](void* stream) {
    if (!device_group_backend().join)
      throw Error("GPU ranks join an NCCL group, and this program was built without NCCL (no nccl.h found)");
    spdlog::info("{} joins the GPU group of {} ranks", name(), size_);
    return device_group_backend().join(device_group_id_, rank_, size_, stream);
  };
}

RankGroup::~RankGroup() = default;

Communicator& RankGroup::communicator() { return *comm_; }

std::string RankGroup::name() const { return rank_name(rank_, options_.tp_size, options_.ep_size); }

msg::WorkerSettings RankGroup::join(const msg::WorkerSettings& settings, const std::string& model_path) {
  collective::JoinOptions join;
  join.hello = transport::encode_message(msg::Heartbeat{0, settings});
  const bool adopts_pool = gpu_ranks_;
  join.check = [settings, model_path, adopts_pool](int, const std::string& hello) {
    const msg::Message theirs = transport::decode_message(hello);
    const auto* heartbeat = std::get_if<msg::Heartbeat>(&theirs);
    if (!heartbeat) return std::string("it sent no settings");
    msg::WorkerSettings compared = heartbeat->settings;
    if (adopts_pool) compared.kv_slots = settings.kv_slots;
    return settings_mismatch(settings, compared, {model_path}).value_or("");
  };
  join.welcome = welcome_of(settings, device_group_id_);
  join.timeout = std::chrono::seconds(options_.dist_timeout_s);
  comm_->join(join);
  spdlog::info("{} of {} joined the group at {}", name(), size_, comm_->endpoint());
  if (rank_ == 0) return settings;
  auto [rank_zero, device_group_id] = parse_welcome(comm_->welcome());
  device_group_id_ = std::move(device_group_id);
  return rank_zero;
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
