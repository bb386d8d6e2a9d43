#pragma once
// Joining a trainer's torch.distributed process group as one of its ranks, over the group's TCPStore
// (TcpStoreClient), as torch 2.x does for an `init_method` of tcp://ADDRESS:PORT and as SGLang's
// init_custom_process_group names the group (the trainer's code, used unchanged by slime, verl and
// SGLang's tests): the keys are documented in docs/rl.md ("How the engine joins torch's group").
//
// - Rendezvous: rank 0 serves the store and waits until `world_size` ranks have each added 1 to the
//   store's raw key "init/" (TCPStore::waitForWorkers); every rank's store client adds its 1 on
//   connecting, after VALIDATE.
// - NCCL's unique id: ProcessGroupNCCL's rank 0 makes an ncclUniqueId when it makes a communicator
//   (at the group's first collective; during init where the group is given a device_id) and sets it
//   under the key "N" (N counts the group's communicators from 0) through the group's prefix stores:
//   PrefixStore(group_name) from init_custom_process_group, then PrefixStore("{group_name}/") and
//   PrefixStore("cuda/") from _new_process_group_helper, each joining prefix and key with "/", and
//   TCPStore's own "/" before every user key: "/{group_name}/{group_name}//cuda//N".
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "collective/tcp_store_client.h"

namespace moe::collective {

// The raw TCPStore key every rank adds 1 to on joining (torch's TCPStore::initKey_).
inline constexpr const char* kTorchWorkerCountKey = "init/";

// The TCPStore key under which the group's rank 0 publishes the NCCL unique id of its communicator
// number `communicator`.
std::string torch_nccl_id_key(const std::string& group_name, int communicator);

class TorchRendezvous {
 public:
  // Connects to the trainer's store (waiting up to `timeout` for it to open) and counts this rank in.
  TorchRendezvous(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);

  // The id rank 0 published for communicator `communicator` of the group, polled every 50 ms (as the
  // trainer may make it long after the join) until it is there, or none once `stop` is set.
  std::optional<std::string> nccl_unique_id(const std::string& group_name, int communicator,
                                            const std::atomic<bool>& stop);

 private:
  TcpStoreClient store_;
};

}  // namespace moe::collective
