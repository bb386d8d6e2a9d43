// A kernel that only waits: tests put it on a stream to make the work behind it late (a slow copy).
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace moe::cuda {
namespace {

__device__ uint64_t global_ns() {
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__global__ void spin_kernel(int64_t nanoseconds) {
  const uint64_t start = global_ns();
  while (global_ns() - start < static_cast<uint64_t>(nanoseconds)) __nanosleep(1000);
}

}  // namespace

void spin_for(int64_t nanoseconds, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  check_launch("spin_for");
}

}  // namespace moe::cuda
