#pragma once
// The communicator of GPU ranks, one process (or thread) per GPU: NCCL's collectives on the rank's
// CUDA stream, over buffers in device memory. Rank 0 makes the group's unique id (nccl_unique_id) and
// the others receive it through the engine's own handshake (the host communicator's welcome), so
// ranks on different hosts join alike. NCCL adds in its own order (ring or tree, fixed for one
// topology and group size), not rank order: results repeat from run to run but need not equal the
// host communicator's bit for bit. Built only where nccl.h and libnccl are found (MOE_NCCL).
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "parallel/device_group.h"

struct ncclComm;  // nccl.h's communicator, named here without including nccl.h

namespace moe {

// The element types a broadcast carries (a trainer's weights).
enum class NcclElement { BFloat16, Float16, Float32 };

// A new group's id (NCCL's ncclUniqueId), as bytes to hand to every rank.
std::string nccl_unique_id();

class NcclCommunicator final : public DeviceGroup {
 public:
  // Joins the group of `size` ranks named by `unique_id` as `rank`, on the current CUDA device; blocks
  // until every rank has joined. A moe::Error naming NCCL's reason otherwise.
  NcclCommunicator(const std::string& unique_id, int rank, int size, cudaStream_t stream);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Enqueued on the stream: the caller synchronizes before reading on the host.
  void all_reduce_sum(float* data, int64_t count) override;
  void all_gather(const void* in, size_t bytes, void* out) override;
  // Polls the stream and NCCL's asynchronous error (a peer that died, a network fault) until the stream
  // is done; aborts the communicator on an error or after `timeout`.
  void wait(std::chrono::milliseconds timeout) override;
  // Rank `root`'s `count` elements of `type` at `data` (device memory) replace every other rank's,
  // enqueued on the stream (ncclBroadcast, as torch's broadcast calls it: same count and type).
  void broadcast(void* data, size_t count, NcclElement type, int root);

 private:
  struct Comm;
  // The communicator, or a moe::Error once wait() aborted it.
  ncclComm* live_comm() const;
  std::unique_ptr<Comm> comm_;
  int rank_;
  int size_;
  cudaStream_t stream_;
};

}  // namespace moe
