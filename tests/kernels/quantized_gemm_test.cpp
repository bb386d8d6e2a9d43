// The quantized GEMM (Q8 and Q4, every instruction set this CPU runs) against reference::linear_rows
// in double precision over a float32 matrix of the dequantized weights (value × scale), built here
// from the row-major values and scales, so the expected values owe nothing to the tiled layout:
// token counts 1..13 and past the token slab, odd row and column counts, row ranges that start and
// end mid-tile, group sizes 32 and 128 with a short last group, and one scale per row.
#include "kernels/quantized_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "gemm_rows_check.h"
#include "kernels/int8_activations.h"
#include "kernels/quantized_weight.h"
#include "kernels/reference.h"

namespace moe {
namespace {

using test::expect_gemm_rows;
constexpr float kSentinel = -12345.0f;

struct TestMatrix {
  DType dtype;
  int64_t rows, cols, group_size;  // group_size as stored
  std::vector<int8_t> values;      // row-major
  std::vector<float> scales;       // [rows, groups]
  std::vector<float> dequantized;  // row-major float32: value × scale
  quantized::QuantizedMatrix tiled;

  TestMatrix(DType dtype_, int64_t rows_, int64_t cols_, int64_t requested_group, uint32_t seed)
      : dtype(dtype_), rows(rows_), cols(cols_),
        group_size(quantized::storage_group_size(requested_group, cols_, "test")) {
    std::mt19937 rng(seed);
    const int low = dtype == DType::Q8 ? -128 : -8, high = dtype == DType::Q8 ? 127 : 7;
    std::uniform_int_distribution<int> value(low, high);
    std::uniform_real_distribution<float> scale(0.001f, 0.1f);
    const int64_t groups = quantized::num_groups(cols, group_size);
    for (int64_t i = 0; i < rows * cols; ++i) values.push_back(static_cast<int8_t>(value(rng)));
    for (int64_t i = 0; i < rows * groups; ++i) scales.push_back(scale(rng));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        dequantized.push_back(static_cast<float>(values[r * cols + c]) * scales[r * groups + c / group_size]);
    tiled = quantized::quantized_copy(dtype, values, rows, cols, scales, group_size);
  }
  WeightView reference_view() const { return WeightView{dequantized.data(), DType::F32, rows, cols}; }
};

std::vector<float> random_activations(int64_t tokens, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(tokens * cols));
  for (float& v : x) v = normal(rng);
  return x;
}

std::vector<GemmIsa> supported_isas() {
  std::vector<GemmIsa> isas;
  for (const GemmIsa isa : {GemmIsa::Avx2, GemmIsa::Avx512})
    if (gemm_isa_supported(isa)) isas.push_back(isa);
  return isas;
}

// Rows [row_begin, row_end) into columns [y_offset, ...) of a y of row stride out_stride; every other
// element must keep its sentinel.
// The activations the integer-product tiles multiply: each int8 value times its block's scale.
std::vector<float> int8_dequantized(const PackedActivations& packed) {
  std::vector<float> x(static_cast<size_t>(packed.num_tokens * packed.cols));
  for (int64_t t = 0; t < packed.num_tokens; ++t)
    for (int64_t c = 0; c < packed.cols; ++c)
      x[t * packed.cols + c] = static_cast<float>(packed.int8_values[t * packed.stride + c]) *
                               packed.int8_scales[t * (packed.stride / quantized::kChunkCols) + c / quantized::kChunkCols];
  return x;
}

// With KernelDType::Int8 the reference multiplies the int8 activations (as int8_dequantized gives
// them): the tiles' integer sums are exact, so they too must agree within float32 rounding.
void expect_matches_reference(GemmIsa isa, const TestMatrix& w, int64_t tokens, int64_t row_begin, int64_t row_end,
                              int64_t out_stride, int64_t y_offset, KernelDType kernel_dtype = KernelDType::F32) {
  std::vector<float> x = random_activations(tokens, w.cols, static_cast<uint32_t>(tokens + 7));
  PackedActivations packed;
  pack_activations(x.data(), tokens, w.cols, w.dtype, packed, isa, kernel_dtype);
  if (kernel_dtype == KernelDType::Int8) x = int8_dequantized(packed);
  std::vector<float> y(static_cast<size_t>(tokens * out_stride), kSentinel);
  quantized_gemm_rows(packed, w.tiled.view, row_begin, row_end, y.data() + y_offset, out_stride);
  const int64_t rows = row_end - row_begin;
  std::vector<double> want(static_cast<size_t>(tokens * rows)), magnitude(want.size());
  reference::linear_rows(x.data(), tokens, w.reference_view(), row_begin, row_end, want.data(), magnitude.data());
  expect_gemm_rows(
      y, {tokens, out_stride, y_offset, row_begin, row_end}, kSentinel,
      [&](int64_t i) { return std::pair{want[i], 1e-5 * magnitude[i]}; },
      [&](int64_t t, int64_t r) {
        return std::string(gemm_isa_name(isa)) + " " + kernel_dtype_name(kernel_dtype) + " products, " +
               dtype_name(w.dtype) + " group " + std::to_string(w.group_size) +
               ", " + std::to_string(tokens) + " tokens, token " + std::to_string(t) + ", row " + std::to_string(r);
      });
}

TEST(QuantizedWeight, TiledElementsAreValueTimesScale) {
  for (const DType dtype : {DType::Q8, DType::Q4})
    for (const int64_t group : {int64_t{32}, int64_t{128}, int64_t{0}}) {
      const TestMatrix w(dtype, 13, 203, group, 3);
      for (int64_t r = 0; r < w.rows; ++r)
        for (int64_t c = 0; c < w.cols; ++c) {
          ASSERT_EQ(quantized::stored_value(w.tiled.view, r, c), w.values[r * w.cols + c]) << r << ", " << c;
          ASSERT_EQ(w.tiled.view.at(r, c), w.dequantized[r * w.cols + c]) << r << ", " << c;
        }
      std::vector<float> row(static_cast<size_t>(w.cols));
      w.tiled.view.row_to_float(12, row.data());
      EXPECT_EQ(row, std::vector<float>(w.dequantized.end() - w.cols, w.dequantized.end()));
    }
}

TEST(QuantizedWeight, GroupSizesMustBeWholeChunks) {
  EXPECT_EQ(quantized::storage_group_size(128, 768, "w"), 128);
  EXPECT_EQ(quantized::storage_group_size(-1, 100, "w"), 128);   // one group: padded to whole chunks
  EXPECT_EQ(quantized::storage_group_size(1024, 768, "w"), 768);
  EXPECT_THROW(quantized::storage_group_size(48, 768, "w"), Error);
}

TEST(QuantizedWeight, SymmetricQuantizationRoundsToTheNearestStep) {
  const int64_t rows = 5, cols = 70;
  std::vector<float> w = random_activations(rows, cols, 11);
  w[3] = 0.0f;
  std::fill(w.begin() + cols, w.begin() + 2 * cols, 0.0f);  // an all-zero row gets scale 0
  for (const DType dtype : {DType::Q8, DType::Q4})
    for (const int64_t group : {int64_t{32}, int64_t{0}}) {
      const int64_t stored = quantized::storage_group_size(group, cols, "w"), groups = quantized::num_groups(cols, stored);
      std::vector<int8_t> values(static_cast<size_t>(rows * cols));
      std::vector<float> scales(static_cast<size_t>(rows * groups));
      quantized::quantize_symmetric(WeightView{w.data(), DType::F32, rows, cols}, dtype, stored, values.data(),
                                    scales.data());
      const float limit = dtype == DType::Q8 ? 127.0f : 7.0f;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < groups; ++g) {
          float largest = 0.0f;
          for (int64_t c = g * stored; c < std::min(cols, (g + 1) * stored); ++c) largest = std::max(largest, std::abs(w[r * cols + c]));
          const float scale = scales[r * groups + g];
          ASSERT_EQ(scale, largest / limit);
          for (int64_t c = g * stored; c < std::min(cols, (g + 1) * stored); ++c) {
            const float error = std::abs(values[r * cols + c] * scale - w[r * cols + c]);
            ASSERT_LE(error, scale / 2 * (1 + 1e-6f)) << dtype_name(dtype) << " row " << r << " col " << c;
          }
        }
    }
}

class QuantizedGemmTokens : public ::testing::TestWithParam<std::tuple<GemmIsa, DType, int64_t, int64_t>> {};

// 60 x 203: 53 rows from 5, neither end on a tile or block boundary; 203 columns end mid-chunk and
// leave a short last group; y 70 wide, the rows written from column 6.
TEST_P(QuantizedGemmTokens, MatchesDoublePrecisionOnRowRangeAndGroupTail) {
  const auto [isa, dtype, group, tokens] = GetParam();
  const TestMatrix w(dtype, 60, 203, group, 1);
  expect_matches_reference(isa, w, tokens, 5, 58, 70, 6);
}

TEST_P(QuantizedGemmTokens, MatchesDoublePrecisionOnWholeGroups) {
  const auto [isa, dtype, group, tokens] = GetParam();
  const TestMatrix w(dtype, 49, 256, group, 2);
  expect_matches_reference(isa, w, tokens, 0, 49, 49, 0);
}

TEST_P(QuantizedGemmTokens, IntegerProductsMatchDoublePrecisionOnTheirInt8Activations) {
  const auto [isa, dtype, group, tokens] = GetParam();
  expect_matches_reference(isa, TestMatrix(dtype, 60, 203, group, 1), tokens, 5, 58, 70, 6, KernelDType::Int8);
  expect_matches_reference(isa, TestMatrix(dtype, 49, 256, group, 2), tokens, 0, 49, 49, 0, KernelDType::Int8);
}

INSTANTIATE_TEST_SUITE_P(EveryShape, QuantizedGemmTokens,
                         ::testing::Combine(::testing::ValuesIn(supported_isas()),
                                            ::testing::Values(DType::Q8, DType::Q4),
                                            ::testing::Values(int64_t{32}, int64_t{128}, int64_t{0}),
                                            ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 13, 64, 193)));

// Few columns: under one chunk, one, and one and a bit; a single row.
TEST(QuantizedGemm, NarrowMatricesAndASingleRow) {
  for (const GemmIsa isa : supported_isas())
    for (const DType dtype : {DType::Q8, DType::Q4})
      for (const int64_t cols : {1, 5, 31, 32, 33}) {
        expect_matches_reference(isa, TestMatrix(dtype, 9, cols, 32, 5), 3, 0, 9, 9, 0);
        expect_matches_reference(isa, TestMatrix(dtype, 1, cols, 0, 6), 2, 0, 1, 1, 0);
      }
}

// Every int8 weight, -128 included, against activations at ±127: the largest products the
// integer tiles meet, which must neither saturate nor lose a sign.
TEST(QuantizedGemm, IntegerProductsOfExtremeValuesAreExact) {
  const int64_t rows = 4, cols = 256;
  std::vector<int8_t> values(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i) values[i] = static_cast<int8_t>(i % 256 - 128);
  const auto w = quantized::quantized_copy(DType::Q8, values, rows, cols, std::vector<float>(rows, 1.0f), cols);
  for (const float sign : {1.0f, -1.0f}) {
    std::vector<float> x(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c) x[c] = (c % 3 == 0 ? -sign : sign) * 127.0f;
    PackedActivations packed;
    pack_activations(x.data(), 1, cols, DType::Q8, packed, GemmIsa::Avx2, KernelDType::Int8);
    std::vector<float> y(rows);
    quantized_gemm_rows(packed, w.view, 0, rows, y.data(), rows);
    for (int64_t r = 0; r < rows; ++r) {
      double want = 0.0;
      for (int64_t c = 0; c < cols; ++c) want += static_cast<double>(values[r * cols + c]) * x[c];
      EXPECT_EQ(y[r], want) << "row " << r << ", sign " << sign;
    }
  }
}

TEST(Int8Activations, BlocksRoundToTheNearestOf255Levels) {
  const int64_t tokens = 3, cols = 70, stride = 96;
  std::vector<float> x = random_activations(tokens, cols, 4);
  std::fill(x.begin() + cols, x.begin() + cols + 32, 0.0f);  // token 1's first block: all zeros
  x[2 * cols + 40] = 1e6f;                                   // one outlier: only its block coarsens
  std::vector<int8_t> values(static_cast<size_t>(tokens * stride), 99);
  std::vector<float> scales(static_cast<size_t>(tokens * stride / 32));
  quantize_activation_blocks(x.data(), tokens, cols, stride, values.data(), scales.data());
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t b = 0; b < stride / 32; ++b) {
      const float scale = scales[t * 3 + b];
      float largest = 0.0f;
      for (int64_t c = b * 32; c < std::min(cols, b * 32 + 32); ++c) largest = std::max(largest, std::abs(x[t * cols + c]));
      ASSERT_EQ(scale, largest / 127.0f) << t << ", " << b;
      for (int64_t c = b * 32; c < b * 32 + 32; ++c) {
        const int8_t q = values[t * stride + c];
        if (c >= cols) {
          ASSERT_EQ(q, 0) << "padding " << t << ", " << c;
          continue;
        }
        ASSERT_LE(std::abs(q * scale - x[t * cols + c]), scale / 2 * (1 + 1e-5f)) << t << ", " << c;
        ASSERT_GE(q, -127);
      }
    }
  EXPECT_EQ(scales[3], 0.0f);
  EXPECT_LT(scales[6], scales[7]);
}

TEST(QuantizedGemm, RejectsActivationsPackedForOtherWeights) {
  const TestMatrix w(DType::Q4, 8, 64, 32, 1);
  const std::vector<float> x = random_activations(1, 64, 1);
  PackedActivations packed;
  pack_activations(x.data(), 1, 64, DType::Q8, packed);
  std::vector<float> y(8);
  EXPECT_THROW(quantized_gemm_rows(packed, w.tiled.view, 0, 8, y.data(), 8), Error);
}

}  // namespace
}  // namespace moe
