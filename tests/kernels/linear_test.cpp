// linear() against reference::linear in double precision, for every path: the half-precision GEMM
// (bf16 and f16, one token and many, split over the thread pool's row chunks) and Eigen's for f32,
// row subsets and bias, on shapes that divide neither the row chunks nor the SIMD width.
#include "kernels/linear.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/reference.h"
#include "kernels/weight_tiling.h"

namespace moe {
namespace {

// One matrix in every dtype: float32 row-major, the half-precision ones tiled as a checkpoint's.
struct Matrix {
  std::vector<uint16_t> bf16, f16;
  std::vector<float> f32;  // the bf16 values, widened, so every dtype describes the same matrix
  WeightView f32_view;
  weight_tiling::TiledWeight tiled_bf16, tiled_f16;
  WeightView view(DType dtype) const {
    return dtype == DType::BF16 ? tiled_bf16.view : dtype == DType::F16 ? tiled_f16.view : f32_view;
  }
};

Matrix random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Matrix m;
  for (int64_t i = 0; i < rows * cols; ++i) {
    m.bf16.push_back(float_to_bf16(dist(rng)));
    m.f32.push_back(bf16_to_float(m.bf16.back()));
    // Exact except under f16's normal range (below 6e-5), far inside the tolerance.
    m.f16.push_back(_cvtss_sh(m.f32.back(), 0));
  }
  m.f32_view = WeightView{m.f32.data(), DType::F32, rows, cols};
  m.tiled_bf16 = weight_tiling::tiled_copy(WeightView{m.bf16.data(), DType::BF16, rows, cols});
  m.tiled_f16 = weight_tiling::tiled_copy(WeightView{m.f16.data(), DType::F16, rows, cols});
  return m;
}

std::vector<float> random_vector(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// y[t, r - begin] by reference::linear_rows over the float32 matrix: the values every dtype's view
// was made from, in a layout that owes nothing to the tiling.
std::vector<double> reference_rows(const std::vector<float>& x, int64_t tokens, const Matrix& w, int64_t begin,
                                   int64_t end) {
  std::vector<double> y(static_cast<size_t>(tokens * (end - begin)));
  reference::linear_rows(x.data(), tokens, w.view(DType::F32), begin, end, y.data());
  return y;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::abs(want[i]))) << what << " at " << i;
}

class LinearTest : public ::testing::TestWithParam<std::tuple<DType, int64_t>> {};

TEST_P(LinearTest, MatchesReferenceOnEveryRow) {
  const auto [dtype, tokens] = GetParam();
  const int64_t rows = 1000, cols = 203;  // neither divides 64 nor 8
  const Matrix w = random_matrix(rows, cols, 1);
  const std::vector<float> x = random_vector(tokens * cols, 2);
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  linear(x.data(), tokens, w.view(dtype), y.data());
  expect_close(y, reference_rows(x, tokens, w, 0, rows), "linear");
}

TEST_P(LinearTest, RowSubsetMatchesThoseRows) {
  const auto [dtype, tokens] = GetParam();
  const int64_t rows = 700, cols = 96, begin = 130, end = 611;
  const Matrix w = random_matrix(rows, cols, 3);
  const std::vector<float> x = random_vector(tokens * cols, 4);
  std::vector<float> y(static_cast<size_t>(tokens * (end - begin)));
  linear_rows(x.data(), tokens, w.view(dtype), begin, end, y.data());
  expect_close(y, reference_rows(x, tokens, w, begin, end), "linear_rows");
}

INSTANTIATE_TEST_SUITE_P(DTypesAndTokenCounts, LinearTest,
                         ::testing::Combine(::testing::Values(DType::BF16, DType::F16, DType::F32),
                                            ::testing::Values(int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4},
                                                              int64_t{5}, int64_t{13}, int64_t{32},
                                                              int64_t{70})));

TEST(Linear, AddsBiasToEveryToken) {
  const int64_t rows = 33, cols = 16, tokens = 3;
  const Matrix w = random_matrix(rows, cols, 5);
  const std::vector<float> x = random_vector(tokens * cols, 6), bias = random_vector(rows, 7);
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  linear(x.data(), tokens, w.view(DType::BF16), y.data(), bias.data());
  std::vector<double> want(static_cast<size_t>(tokens * rows));
  reference::linear(x.data(), tokens, w.view(DType::F32), want.data(), bias.data());
  expect_close(y, want, "linear + bias");
}

}  // namespace
}  // namespace moe
