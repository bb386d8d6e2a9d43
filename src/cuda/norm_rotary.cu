// RMSNorm, a block per row (with the residual add before it, or without).
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace moe::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// One block per row: a decode step has a handful of rows, each a few thousand floats, and a warp
// alone would read its row one latency at a time. A thread keeps its first kCached elements in
// registers, loaded all at once before anything is stored (x and out may be one array, so loads
// after a store would each wait for it); elements past those are read again from memory.
// kAdd: x += branch first (the residual add before a norm), in the same pass.
constexpr int kCached = 8;

template <bool kAdd>
__global__ void rms_norm_kernel(float* x, const float* branch, int64_t dim, const float* weight, float eps,
                                float* out) {
  __shared__ float warp_sums[kThreads / kWarpSize];
  const int64_t row = blockIdx.x, stride = blockDim.x;
  const int warp = static_cast<int>(threadIdx.x / kWarpSize), lane = static_cast<int>(threadIdx.x % kWarpSize);
  float* in = x + row * dim;
  float* o = out + row * dim;
  float values[kCached];
#pragma unroll
  for (int j = 0; j < kCached; ++j) {
    const int64_t i = threadIdx.x + j * stride;
    values[j] = i < dim ? in[i] : 0.0f;
    if constexpr (kAdd) values[j] += i < dim ? branch[row * dim + i] : 0.0f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kCached; ++j) {
    const int64_t i = threadIdx.x + j * stride;
    if (i >= dim) break;
    if constexpr (kAdd) in[i] = values[j];
    sum += values[j] * values[j];
  }
  for (int64_t i = threadIdx.x + kCached * stride; i < dim; i += stride) {
    if constexpr (kAdd) in[i] += branch[row * dim + i];
    sum += in[i] * in[i];
  }
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullWarp, sum, offset);
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < static_cast<int>(blockDim.x / kWarpSize); ++w) total += warp_sums[w];
  const float scale = 1.0f / sqrtf(total / static_cast<float>(dim) + eps);
  // Each thread writes only the elements it read, so out may be x.
#pragma unroll
  for (int j = 0; j < kCached; ++j) {
    const int64_t i = threadIdx.x + j * stride;
    if (i < dim) o[i] = weight[i] * (values[j] * scale);
  }
  for (int64_t i = threadIdx.x + kCached * stride; i < dim; i += stride) o[i] = weight[i] * (in[i] * scale);
}

// Whole warps, no more than a row's elements (q/k norms have rows of head_dim).
unsigned norm_threads(int64_t dim) {
  return static_cast<unsigned>(std::min<int64_t>(kThreads, (dim + kWarpSize - 1) / kWarpSize * kWarpSize));
}

}  // namespace

void rms_norm(const float* x, int64_t rows, int64_t dim, const float* weight, float eps, float* out,
              cudaStream_t stream) {
  if (rows == 0) return;
  // Without kAdd the kernel only reads x.
  rms_norm_kernel<false><<<static_cast<unsigned>(rows), norm_threads(dim), 0, stream>>>(
      const_cast<float*>(x), nullptr, dim, weight, eps, out);
  check_launch("rms_norm");
}

void add_rms_norm(float* x, const float* branch, int64_t rows, int64_t dim, const float* weight, float eps, float* out,
                  cudaStream_t stream) {
  if (rows == 0) return;
  rms_norm_kernel<true><<<static_cast<unsigned>(rows), norm_threads(dim), 0, stream>>>(x, branch, dim, weight, eps,
                                                                                      out);
  check_launch("add_rms_norm");
}

}  // namespace moe::cuda
