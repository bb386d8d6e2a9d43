#pragma once
// The ranks of a model split over processes: expert parallelism (--ep-size N: each rank
// its experts' share of every MoE layer) or tensor parallelism (--tp-size N: each rank its heads'
// and intermediate widths' share of every layer, model/tensor_shard.h), or both (--tp-size T --ep-size E:
// T × E ranks in one group, rank E_r · T + T_r; model/tensor_shard.h's RankShards). Rank 0 is the model worker the
// scheduler talks to; before computing a step it hands the step to the other ranks, which compute it
// alike (every partial output all-reduced across the group) and answer nobody, so the scheduler sees
// one worker and one set of results, identical in form to one process's.
//
// GPU ranks (--device cuda) are one process per GPU (rank R started with the R-th visible GPU as its
// only one) and always split by tensors (RankShards, with --ep-size shards of experts among them); their
// collectives run in a device group (NCCL) whose id rank 0 hands out at the join, with its KV pool's
// size, which every GPU rank adopts (each sizes its own by its free memory, and they must agree).
#include <functional>
#include <memory>
#include <string>

#include "collective/host_communicator.h"
#include "moe/messages.h"
#include "pipeline/serve_options.h"
#include "worker/model_worker.h"

namespace moe::transport {
class Context;
}

namespace moe::actors {

class RankProcesses;

// Whether `options` ask for expert- or tensor-parallel ranks in processes of their own.
bool ranks_in_processes(const ServeOptions& options);

class RankGroup {
 public:
  // This process's side of the group: rank 0 binds options.dist_init_addr (a socket file of ZeroMQ's
  // choosing, ipc://, when empty) and starts ranks 1.. when options.rank_command is given; the others
  // connect. The model may be loaded over communicator() before join(). `context`: the process's ZeroMQ context; with --internal-key-file the ranks
  // authenticate each other with its key. It must outlive the group.
  RankGroup(const ServeOptions& options, transport::Context& context);
  ~RankGroup();

  // Whether the model splits by tensors over the whole group (with --ep-size, its experts too).
  bool tensor_parallel() const { return tensor_parallel_; }
  // GPU ranks: how the model joins the device group, once join() has handed out its id. Null otherwise.
  std::function<std::unique_ptr<DeviceGroup>(void* cuda_stream)> device_group_join();
  int rank() const { return rank_; }
  Communicator& communicator();
  // Blocks until every rank has joined; rank 0 refuses a rank whose `settings` (what it serves: the
  // checkpoint, sizes, how it computes) differ from its own, and one missing, naming it. Returns rank
  // 0's settings, whose KV pool size GPU ranks adopt.
  msg::WorkerSettings join(const msg::WorkerSettings& settings, const std::string& model_path);
  // Rank 0: hands the step to every other rank before computing it.
  void share(const msg::WorkerBatch& batch);
  // Ranks 1..: computes every step rank 0 shares on `worker`, dropping the results, until
  // `keep_running` says no (then returns); a failure (a rank out of step) throws moe::Error.
  void follow(ModelWorker& worker, const std::function<bool()>& keep_running);
  // "expert-parallel rank 1", "tensor-parallel rank 0", "rank 3 (expert-parallel rank 1, tensor-parallel
  // rank 1)": how logs and errors name this rank.
  std::string name() const;

 private:
  const ServeOptions& options_;
  bool gpu_ranks_;
  bool tensor_parallel_;
  int rank_, size_;
  std::string device_group_id_;  // GPU ranks: rank 0's new id, the others' once joined
  std::unique_ptr<collective::HostCommunicator> comm_;
  std::unique_ptr<RankProcesses> processes_;
};

}  // namespace moe::actors
