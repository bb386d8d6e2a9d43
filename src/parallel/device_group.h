#pragma once
// GPU ranks of one model, one process per GPU: the collectives run on the model's CUDA stream over
// device memory (NCCL's, src/nccl/, where the program links it). Rank 0 makes the group's id; the
// others receive it through the engine's own handshake (the host communicator's welcome), so ranks
// on several hosts join alike.
#include <chrono>
#include <memory>
#include <string>

#include "parallel/communicator.h"

namespace moe {

class DeviceGroup : public Communicator {
 public:
  // Returns once every collective and kernel queued on the stream so far has finished. A peer that
  // failed (or no progress within `timeout`) aborts the group and throws moe::Error: every later
  // collective fails too, where a plain wait on the stream would block for ever.
  virtual void wait(std::chrono::milliseconds timeout) = 0;
};

// How a program makes and joins device groups; empty where no implementation is linked.
struct DeviceGroupBackend {
  std::string (*new_group_id)() = nullptr;
  // Blocks until all `size` ranks joined the group named by `group_id`; `cuda_stream` is a cudaStream_t.
  std::unique_ptr<DeviceGroup> (*join)(const std::string& group_id, int rank, int size, void* cuda_stream) = nullptr;
};

// The backend set by the implementation linked into this program (NCCL's registers itself).
inline DeviceGroupBackend& device_group_backend() {
  static DeviceGroupBackend backend;
  return backend;
}

}  // namespace moe
