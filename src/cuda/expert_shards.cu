// Expert parallelism's device-side steps on one GPU: each shard's list of experts with rows, and the
// all-reduce that sums the shards' partial outputs.
#include <string>

#include "common/error.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace moe::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// One warp per shard walks `active` 32 entries at a time, keeping its own experts in order (a
// ballot's prefix count gives each its place), and stops at the list's first -1.
__global__ void split_active_kernel(const int32_t* active, const int32_t* owner, int num_experts, int per_shard,
                                    int32_t* shard_active) {
  const int shard = static_cast<int>(blockIdx.x), lane = static_cast<int>(threadIdx.x);
  int32_t* mine = shard_active + static_cast<int64_t>(shard) * per_shard;
  int count = 0;
  for (int base = 0; base < num_experts; base += kWarpSize) {
    const int i = base + lane;
    const int32_t e = i < num_experts ? active[i] : -1;
    const bool ours = e >= 0 && owner[e] == shard;
    const unsigned taken = __ballot_sync(kFullWarp, ours);
    if (ours) mine[count + __popc(taken & ((1u << lane) - 1u))] = e;
    count += __popc(taken);
    if (__ballot_sync(kFullWarp, e < 0)) break;
  }
  for (int j = count + lane; j < per_shard; j += kWarpSize) mine[j] = -1;
}

struct ShardBuffers {
  float* data[kMaxExpertShards];
};

__global__ void all_reduce_kernel(ShardBuffers buffers, int count_buffers, int64_t count) {
  MOE_GRID_STRIDE(i, count) {
    float total = buffers.data[0][i];
    for (int d = 1; d < count_buffers; ++d) total += buffers.data[d][i];
    for (int d = 0; d < count_buffers; ++d) buffers.data[d][i] = total;
  }
}

void check_shard_count(int count) {
  if (count < 1 || count > kMaxExpertShards)
    throw Error("CUDA expert parallelism supports 1 to " + std::to_string(kMaxExpertShards) + " shards, not " +
                std::to_string(count));
}

}  // namespace

void split_active_by_shard(const int32_t* active, const int32_t* owner, int num_experts, int ep_size,
                           int32_t* shard_active, cudaStream_t stream) {
  check_shard_count(ep_size);
  split_active_kernel<<<static_cast<unsigned>(ep_size), kWarpSize, 0, stream>>>(active, owner, num_experts,
                                                                                 num_experts / ep_size, shard_active);
  check_launch("split_active_by_shard");
}

void all_reduce_sum(float* const* buffers, int count_buffers, int64_t count, cudaStream_t stream) {
  check_shard_count(count_buffers);
  if (count_buffers == 1 || count == 0) return;
  ShardBuffers shards{};
  for (int d = 0; d < count_buffers; ++d) shards.data[d] = buffers[d];
  all_reduce_kernel<<<blocks_for(count), kThreads, 0, stream>>>(shards, count_buffers, count);
  check_launch("all_reduce_sum");
}

}  // namespace moe::cuda
