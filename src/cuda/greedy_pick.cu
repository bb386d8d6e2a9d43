// Greedy sampling on the device: each row's first maximum and its log-probability, so a decode step
// of greedy draws copies back a few bytes a sequence instead of its row of logits.
#include <cmath>

#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace moe::cuda {
namespace {

constexpr int kPickThreads = 1024;

// A running (maximum, Σ e^(x - maximum)) and the lowest index of the maximum. A value replaces the
// maximum only when strictly greater, so equal values keep the lower index; NaN and -inf are never
// picked and add nothing (the host's first_max and sum_of_exps do the same).
struct Running {
  float max;
  float sum;
  int32_t index;
};

__device__ void add_value(Running& r, float v, int32_t index) {
  if (!(v > -INFINITY)) return;
  if (v > r.max) {
    r.sum = r.sum * expf(r.max - v) + 1.0f;
    r.max = v;
    r.index = index;
  } else {
    r.sum += expf(v - r.max);
  }
}

__device__ Running merge(Running a, Running b) {
  if (b.max > a.max || (b.max == a.max && b.index < a.index)) {
    const Running t = a;
    a = b;
    b = t;
  }
  // a holds the maximum; b's sum is rescaled to it (b.max = -inf: nothing to add).
  if (b.max > -INFINITY) a.sum += b.sum * expf(b.max - a.max);
  return a;
}

__device__ Running shuffle_down(const Running& r, int offset) {
  return {__shfl_down_sync(0xffffffffu, r.max, offset), __shfl_down_sync(0xffffffffu, r.sum, offset),
          __shfl_down_sync(0xffffffffu, r.index, offset)};
}

// One block per row: threads stride over the row, then warps and the block merge their runnings.
__global__ void greedy_pick_kernel(const float* logits, int64_t vocab, int32_t* ids, float* logprobs) {
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
  Running r{-INFINITY, 0.0f, 0};
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) add_value(r, row[i], static_cast<int32_t>(i));
  for (int offset = 16; offset > 0; offset /= 2) r = merge(r, shuffle_down(r, offset));
  __shared__ Running warps[kPickThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warps[warp] = r;
  __syncthreads();
  if (warp != 0) return;
  r = lane < static_cast<int>(blockDim.x / 32) ? warps[lane] : Running{-INFINITY, 0.0f, 0};
  for (int offset = 16; offset > 0; offset /= 2) r = merge(r, shuffle_down(r, offset));
  if (lane != 0) return;
  ids[blockIdx.x] = r.index;
  // log_softmax of the pick: x - max - log Σ e^(x - max), with x = max. A row of nothing above -inf
  // gives id 0 and -inf, as on the host.
  logprobs[blockIdx.x] = r.max > -INFINITY ? -logf(r.sum) : -INFINITY;
}

}  // namespace

void greedy_pick(const float* logits, int64_t rows, int64_t vocab, int32_t* ids, float* logprobs,
                 cudaStream_t stream) {
  if (rows == 0) return;
  greedy_pick_kernel<<<static_cast<unsigned>(rows), kPickThreads, 0, stream>>>(logits, vocab, ids, logprobs);
  check_launch("greedy_pick_kernel");
}

}  // namespace moe::cuda
