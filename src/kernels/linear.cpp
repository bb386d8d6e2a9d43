#include "kernels/linear.h"

#include <Eigen/Core>
#include <algorithm>
#include <vector>

namespace moe {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Weight rows are widened a block at a time so the float32 copy stays in cache.
constexpr int64_t kRowBlock = 64;

}  // namespace

void linear_rows(const float* x, int64_t num_tokens, const WeightView& weight, int64_t row_begin, int64_t row_end,
                 float* y) {
  const int64_t cols = weight.cols;
  const int64_t out_cols = row_end - row_begin;
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
