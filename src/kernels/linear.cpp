#include "kernels/linear.h"

#include <immintrin.h>

#include <Eigen/Core>
#include <algorithm>
#include <vector>

namespace moe {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Weight rows are widened a block at a time so the float32 copy stays in cache.
constexpr int64_t kRowBlock = 64;
// Up to this many tokens, a half-precision weight is streamed once through fused dot products
// (memory-bound decode); above it, widened blocks feed Eigen's GEMM (compute-bound prefill).
constexpr int64_t kStreamingMaxTokens = 4;

inline __m256 load8_widened(const uint16_t* p, DType dtype) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (dtype == DType::F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// y[t, r - row_begin] = x[t] · W[r] for T <= kStreamingMaxTokens tokens, reading each weight row once.
template <int T>
void streaming_rows(const float* x, const WeightView& w, int64_t row_begin, int64_t row_end, int64_t out_cols,
                    float* y) {
  const int64_t cols = w.cols;
  const uint16_t* base = static_cast<const uint16_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint16_t* row = base + r * cols;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
      const __m256 wv = load8_widened(row + c, w.dtype);
      for (int t = 0; t < T; ++t) acc[t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + t * cols + c), acc[t]);
    }
    for (int t = 0; t < T; ++t) {
      float sum = horizontal_sum(acc[t]);
      for (int64_t k = c; k < cols; ++k) sum += w.at(r, k) * x[t * cols + k];
      y[t * out_cols + (r - row_begin)] = sum;
    }
  }
}

void streaming_linear(const float* x, int64_t num_tokens, const WeightView& w, int64_t row_begin, int64_t row_end,
                      float* y) {
  const int64_t out_cols = row_end - row_begin;
  switch (num_tokens) {
    case 1: return streaming_rows<1>(x, w, row_begin, row_end, out_cols, y);
    case 2: return streaming_rows<2>(x, w, row_begin, row_end, out_cols, y);
    case 3: return streaming_rows<3>(x, w, row_begin, row_end, out_cols, y);
    default: return streaming_rows<4>(x, w, row_begin, row_end, out_cols, y);
  }
}

}  // namespace

void linear_rows(const float* x, int64_t num_tokens, const WeightView& weight, int64_t row_begin, int64_t row_end,
                 float* y) {
  const int64_t cols = weight.cols;
  const int64_t out_cols = row_end - row_begin;
  if (num_tokens == 0 || out_cols == 0) return;
  if (weight.dtype != DType::F32 && num_tokens <= kStreamingMaxTokens) {
    streaming_linear(x, num_tokens, weight, row_begin, row_end, y);
    return;
  }
  Eigen::Map<const RowMatrix> input(x, num_tokens, cols);
  Eigen::Map<RowMatrix> output(y, num_tokens, out_cols);
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

void linear(const float* x, int64_t num_tokens, const WeightView& weight, float* y, const float* bias) {
  linear_rows(x, num_tokens, weight, 0, weight.rows, y);
  if (!bias) return;
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t r = 0; r < weight.rows; ++r) y[t * weight.rows + r] += bias[r];
}

}  // namespace moe
