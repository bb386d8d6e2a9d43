// Element-wise kernels: gathers, residual and bias adds, SwiGLU, the gated shared expert, rounding
// to bf16.
#include <cuda_bf16.h>

#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/weight_access.cuh"

namespace moe::cuda {
namespace {

template <typename Source>
__global__ void gather_rows_kernel(const Source* src, const int32_t* index, int divisor, int64_t rows, int64_t width,
                                   float* out) {
  MOE_GRID_STRIDE(i, rows * width) {
    const int64_t r = i / width;
    out[i] = widen(src[static_cast<int64_t>(index[r] / divisor) * width + i % width]);
  }
}

__global__ void add_in_place_kernel(float* x, const float* y, int64_t n) {
  MOE_GRID_STRIDE(i, n) x[i] += y[i];
}

__global__ void add_bias_kernel(float* x, const float* bias, int64_t rows, int64_t width) {
  MOE_GRID_STRIDE(i, rows * width) x[i] += bias[i % width];
}

__global__ void silu_mul_kernel(float* gate, const float* up, int64_t n) {
  MOE_GRID_STRIDE(i, n) gate[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

__global__ void add_sigmoid_gated_kernel(float* out, const float* gate, const float* shared, int64_t rows,
                                         int64_t width) {
  MOE_GRID_STRIDE(i, rows * width) out[i] += sigmoid(gate[i / width]) * shared[i];
}

__global__ void round_to_bf16_kernel(const float* src, int64_t n, uint16_t* dst) {
  MOE_GRID_STRIDE(i, n) dst[i] = __bfloat16_as_ushort(__float2bfloat16_rn(src[i]));
}

}  // namespace

void gather_rows(const float* src, const int32_t* index, int index_divisor, int64_t rows, int64_t width, float* out,
                 cudaStream_t stream) {
  if (rows == 0) return;
  gather_rows_kernel<<<blocks_for(rows * width), kThreads, 0, stream>>>(src, index, index_divisor, rows, width, out);
  check_launch("gather_rows");
}

void gather_weight_rows(const WeightRef& src, const int32_t* index, int64_t rows, float* out, cudaStream_t stream) {
  if (rows == 0) return;
  if (src.bf16)
    gather_rows_kernel<<<blocks_for(rows * src.cols), kThreads, 0, stream>>>(
        static_cast<const uint16_t*>(src.data), index, 1, rows, src.cols, out);
  else
    gather_rows_kernel<<<blocks_for(rows * src.cols), kThreads, 0, stream>>>(static_cast<const float*>(src.data),
                                                                            index, 1, rows, src.cols, out);
  check_launch("gather_weight_rows");
}

void add_in_place(float* x, const float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_in_place_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
  check_launch("add_in_place");
}

void add_bias(float* x, const float* bias, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows == 0) return;
  add_bias_kernel<<<blocks_for(rows * width), kThreads, 0, stream>>>(x, bias, rows, width);
  check_launch("add_bias");
}

void silu_mul(float* gate, const float* up, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  silu_mul_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, n);
  check_launch("silu_mul");
}

void add_sigmoid_gated(float* out, const float* gate, const float* shared, int64_t rows, int64_t width,
                       cudaStream_t stream) {
  if (rows == 0) return;
  add_sigmoid_gated_kernel<<<blocks_for(rows * width), kThreads, 0, stream>>>(out, gate, shared, rows, width);
  check_launch("add_sigmoid_gated");
}

void round_to_bf16(const float* src, int64_t n, uint16_t* dst, cudaStream_t stream) {
  if (n == 0) return;
  round_to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, n, dst);
  check_launch("round_to_bf16");
}

}  // namespace moe::cuda
