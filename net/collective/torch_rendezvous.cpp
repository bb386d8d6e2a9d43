#include "collective/torch_rendezvous.h"

#include <thread>

namespace moe::collective {

std::string torch_nccl_id_key(const std::string& group_name, int communicator) {
  return "/" + group_name + "/" + group_name + "//cuda//" + std::to_string(communicator);
}

TorchRendezvous::TorchRendezvous(const std::string& host, uint16_t port, std::chrono::milliseconds timeout)
    : store_(host, port, timeout) {
  store_.add(kTorchWorkerCountKey, 1);
}

std::optional<std::string> TorchRendezvous::nccl_unique_id(const std::string& group_name, int communicator,
                                                           const std::atomic<bool>& stop) {
  const std::string key = torch_nccl_id_key(group_name, communicator);
  while (!store_.check({key})) {
    if (stop) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::vector<uint8_t> id = store_.get(key);
  return std::string(id.begin(), id.end());
}

}  // namespace moe::collective
