#include "kernels/linear.h"

#include <Eigen/Core>
#include <algorithm>
#include <vector>

#include "kernels/simd.h"
#include "kernels/thread_pool.h"

namespace moe {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Weight rows are widened a block at a time so the float32 copy stays in cache.
constexpr int64_t kRowBlock = 64;
// Up to this many tokens, a half-precision weight is streamed once through fused dot products
// (decode batches, and experts that got few tokens); above it, widened blocks feed Eigen's GEMM
// (prefill), whose packing and widening only pay off over many tokens.
constexpr int64_t kStreamingMaxTokens = 32;
// Tokens that share one pass over a weight row: as many accumulators as the registers hold.
constexpr int64_t kTokenGroup = 8;
// A parallel chunk covers at least this many (weight element x token) products: about 20 µs of work,
// well above the cost of handing it to another thread.
constexpr int64_t kMinChunkWeights = int64_t{1} << 18;

// y[t, r] = x[t] · W[r] for one weight row and T <= kTokenGroup tokens (x and y already offset to
// the group's first token). U column groups are summed in separate accumulators so T·U independent
// FMA chains hide the FMA latency; with one chain a single token could not keep up with memory.
template <int T>
void streaming_row(const float* x, const uint16_t* row, const WeightView& w, int64_t r, int64_t out_cols, float* y) {
  constexpr int U = T >= 4 ? 1 : 4 / T;
  const int64_t cols = w.cols;
  __m256 acc[T][U];
  for (int t = 0; t < T; ++t)
    for (int u = 0; u < U; ++u) acc[t][u] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 * U <= cols; c += 8 * U) {
    for (int u = 0; u < U; ++u) {
      const __m256 wv = simd::load8_widened(row + c + 8 * u, w.dtype);
      for (int t = 0; t < T; ++t) acc[t][u] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + t * cols + c + 8 * u), acc[t][u]);
    }
  }
  for (; c + 8 <= cols; c += 8) {
    const __m256 wv = simd::load8_widened(row + c, w.dtype);
    for (int t = 0; t < T; ++t) acc[t][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + t * cols + c), acc[t][0]);
  }
  for (int t = 0; t < T; ++t) {
    for (int u = 1; u < U; ++u) acc[t][0] = _mm256_add_ps(acc[t][0], acc[t][u]);
    float sum = simd::horizontal_sum(acc[t][0]);
    for (int64_t k = c; k < cols; ++k) sum += w.at(r, k) * x[t * cols + k];
    y[t * out_cols] = sum;
  }
}

using StreamingRowFn = void (*)(const float*, const uint16_t*, const WeightView&, int64_t, int64_t, float*);
constexpr StreamingRowFn kStreamingRow[kTokenGroup] = {streaming_row<1>, streaming_row<2>, streaming_row<3>,
                                                       streaming_row<4>, streaming_row<5>, streaming_row<6>,
                                                       streaming_row<7>, streaming_row<8>};

// y[t, r - row_begin] = x[t] · W[r] for T <= kStreamingMaxTokens tokens: each weight row is widened
// in registers once per group of kTokenGroup tokens, and stays in L1 from one group to the next, so
// the weights cross the memory bus once.
void streaming_linear(const float* x, int64_t num_tokens, const WeightView& w, int64_t row_begin, int64_t row_end,
                      int64_t out_cols, float* y) {
  const uint16_t* base = static_cast<const uint16_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r)
    for (int64_t t0 = 0; t0 < num_tokens; t0 += kTokenGroup) {
      const int64_t group = std::min(kTokenGroup, num_tokens - t0);
      kStreamingRow[group - 1](x + t0 * w.cols, base + r * w.cols, w, r, out_cols, y + t0 * out_cols + (r - row_begin));
    }
}

// Output rows [row_begin, row_end) on the calling thread. y's row stride is out_stride and its
// column 0 is output row y_first_row.
void linear_rows_serial(const float* x, int64_t num_tokens, const WeightView& weight, int64_t row_begin,
                        int64_t row_end, int64_t y_first_row, int64_t out_stride, float* y) {
  const int64_t cols = weight.cols;
  const int64_t out_cols = row_end - row_begin;
  float* y_block = y + (row_begin - y_first_row);
  if (weight.dtype != DType::F32 && num_tokens <= kStreamingMaxTokens) {
    streaming_linear(x, num_tokens, weight, row_begin, row_end, out_stride, y_block);
    return;
  }
  using Stride = Eigen::OuterStride<>;
  Eigen::Map<const RowMatrix> input(x, num_tokens, cols);
  Eigen::Map<RowMatrix, 0, Stride> output(y_block, num_tokens, out_cols, Stride(out_stride));
  if (weight.dtype == DType::F32) {
    Eigen::Map<const RowMatrix> w(static_cast<const float*>(weight.data) + row_begin * cols, out_cols, cols);
    output.noalias() = input * w.transpose();
    return;
  }
  thread_local std::vector<float> block;
  block.resize(static_cast<size_t>(kRowBlock * cols));
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kRowBlock) {
    const int64_t n = std::min(kRowBlock, row_end - r0);
    for (int64_t r = 0; r < n; ++r) weight.row_to_float(r0 + r, block.data() + r * cols);
    Eigen::Map<const RowMatrix> w(block.data(), n, cols);
    output.middleCols(r0 - row_begin, n).noalias() = input * w.transpose();
  }
}

}  // namespace

void linear_rows(const float* x, int64_t num_tokens, const WeightView& weight, int64_t row_begin, int64_t row_end,
                 float* y) {
  const int64_t out_cols = row_end - row_begin;
  if (num_tokens == 0 || out_cols == 0) return;
  // Chunks of whole widening blocks, and of at least kMinChunkWeights weights, so a chunk is
  // worth handing to another thread.
  const int64_t min_rows = std::max<int64_t>(1, kMinChunkWeights / std::max<int64_t>(1, weight.cols * num_tokens));
  const int64_t chunk_rows = (min_rows + kRowBlock - 1) / kRowBlock * kRowBlock;
  parallel_for(out_cols, chunk_rows, [&](int64_t begin, int64_t end) {
    linear_rows_serial(x, num_tokens, weight, row_begin + begin, row_begin + end, row_begin, out_cols, y);
  });
}

void linear(const float* x, int64_t num_tokens, const WeightView& weight, float* y, const float* bias) {
  linear_rows(x, num_tokens, weight, 0, weight.rows, y);
  if (!bias) return;
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t r = 0; r < weight.rows; ++r) y[t * weight.rows + r] += bias[r];
}

}  // namespace moe
