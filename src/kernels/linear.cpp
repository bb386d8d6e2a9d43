#include "kernels/linear.h"

#include <Eigen/Core>
#include <immintrin.h>

#include <algorithm>

#include "kernels/half_gemm.h"
#include "kernels/half_gemm_kernels.h"
#include "kernels/quantized_gemm.h"
#include "kernels/quantized_weight.h"
#include "kernels/thread_pool.h"

namespace moe {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Parallel chunks are whole multiples of this many rows: two of the half-precision GEMM's row
// blocks (a multiple of its tile heights), so only a chunk at the end has a row remainder.
constexpr int64_t kChunkRowMultiple = 48;
// A parallel chunk covers at least this many (weight element x token) products: about 20 µs of work,
// well above the cost of handing it to another thread.
constexpr int64_t kMinChunkWeights = int64_t{1} << 18;

// Float32 weights, output rows [row_begin, row_end), by Eigen's GEMM on the calling thread. y's
// row stride is out_stride and its column 0 is output row y_first_row.
void f32_linear_rows(const float* x, int64_t num_tokens, const WeightView& weight, int64_t row_begin, int64_t row_end,
                     int64_t y_first_row, int64_t out_stride, float* y) {
  const int64_t cols = weight.cols, out_cols = row_end - row_begin;
  using Stride = Eigen::OuterStride<>;
  Eigen::Map<const RowMatrix> input(x, num_tokens, cols);
  Eigen::Map<RowMatrix, 0, Stride> output(y + (row_begin - y_first_row), num_tokens, out_cols, Stride(out_stride));
  Eigen::Map<const RowMatrix> w(static_cast<const float*>(weight.data) + row_begin * cols, out_cols, cols);
  output.noalias() = input * w.transpose();
}

}  // namespace

void linear_rows(const float* x, int64_t num_tokens, const WeightView& weight, int64_t row_begin, int64_t row_end,
                 float* y) {
  const int64_t out_cols = row_end - row_begin;
  if (num_tokens == 0 || out_cols == 0) return;
  const int64_t min_rows = std::max<int64_t>(1, kMinChunkWeights / std::max<int64_t>(1, weight.cols * num_tokens));
  const int64_t chunk_rows = (min_rows + kChunkRowMultiple - 1) / kChunkRowMultiple * kChunkRowMultiple;
  if (weight.dtype == DType::F32) {
    parallel_for(out_cols, chunk_rows, [&](int64_t begin, int64_t end) {
      f32_linear_rows(x, num_tokens, weight, row_begin + begin, row_begin + end, row_begin, out_cols, y);
    });
    return;
  }
  // Half-precision and quantized weights at any token count: the register-blocked GEMM matched
  // widening blocks to float32 for Eigen even at a 512-token prefill, and reads the weights once. The activations
  // are packed once by the calling thread for every chunk; `packed` names each thread's own
  // buffer, so the chunks reach this one through a reference.
  thread_local PackedActivations packed;
  pack_activations(x, num_tokens, weight.cols, weight.dtype, packed, preferred_gemm_isa(), weight.kernel_dtype);
  const PackedActivations& activations = packed;
  const auto gemm_rows = quantized::is_quantized(weight.dtype) ? quantized_gemm_rows : half_gemm_rows;
  parallel_for(out_cols, chunk_rows, [&](int64_t begin, int64_t end) {
    gemm_rows(activations, weight, row_begin + begin, row_begin + end, y + begin, out_cols);
  });
}

void prefetch_leading_rows(const WeightView& weight) {
  // As far as the half-precision tiles prefetch ahead of themselves: past it, theirs takes over.
  const int64_t size = quantized::is_quantized(weight.dtype)
                           ? quantized::tiled_bytes(weight.dtype, weight.rows, weight.cols)
                           : weight.rows * weight.cols * static_cast<int64_t>(dtype_size(weight.dtype));
  const char* bytes = static_cast<const char*>(weight.data);
  for (int64_t offset = 0; offset < std::min(size, half_gemm_kernels::kPrefetchBytes); offset += 64)
    _mm_prefetch(bytes + offset, _MM_HINT_T0);
}

void linear(const float* x, int64_t num_tokens, const WeightView& weight, float* y, const float* bias) {
  linear_rows(x, num_tokens, weight, 0, weight.rows, y);
  if (!bias) return;
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t r = 0; r < weight.rows; ++r) y[t * weight.rows + r] += bias[r];
}

}  // namespace moe
