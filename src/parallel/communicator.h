#pragma once
// The collectives that join ranks of one model split over processes or devices (expert and tensor
// parallelism): every rank calls the same collectives in the same order. Two implementations: the
// host communicator over ZeroMQ for CPU processes (net/collective/), and NCCL for GPUs
// (src/nccl/, built only where NCCL is found). Buffers live where the model computes: host memory for
// the host communicator, device memory for NCCL.
#include <cstddef>
#include <cstdint>

namespace moe {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In place: afterwards every rank's data[0, count) holds the element-wise sum over the ranks. The host
  // communicator adds in rank order (((r0 + r1) + r2) + ...), exactly as the in-process all_reduce_sum
  // (moe/moe_ops.h) adds D shards, so results do not depend on timing or on how shards map to processes.
  virtual void all_reduce_sum(float* data, int64_t count) = 0;
  // Every rank's `bytes` bytes of `in`, concatenated in rank order into `out` (size() * bytes).
  virtual void all_gather(const void* in, size_t bytes, void* out) = 0;
};

}  // namespace moe
