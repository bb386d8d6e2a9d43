#pragma once
// How the backend's element-wise kernels are launched: a grid-stride loop over n items, so any n
// fits one launch, with the launch itself checked.
#include <algorithm>
#include <cstdint>

#include "cuda/device.h"

namespace moe::cuda {

constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) {
  constexpr int64_t kMaxBlocks = int64_t{1} << 20;
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// The items of this thread: i, i + stride, ... below n.
#define MOE_GRID_STRIDE(i, n)                                                                         \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);              \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace moe::cuda
