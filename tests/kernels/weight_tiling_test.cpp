// The tiled weight layout: every element lands where row_to_float and at() look for it, the padding
// is zero (a kernel multiplies it by the activations' zero padding), and bad inputs are refused.
#include "kernels/weight_tiling.h"

#include <gtest/gtest.h>

#include <immintrin.h>

#include <set>
#include <vector>

#include "common/error.h"

namespace moe {
namespace {

// Element i of a rows x cols matrix holds i + 1 (exact in bf16 and f16 up to 256 and 2048).
std::vector<uint16_t> counting_matrix(DType dtype, int64_t rows, int64_t cols) {
  std::vector<uint16_t> bits;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const float v = static_cast<float>(i % 200 + 1);
    bits.push_back(dtype == DType::BF16 ? float_to_bf16(v) : _cvtss_sh(v, 0));
  }
  return bits;
}

class WeightTilingShapes : public ::testing::TestWithParam<std::tuple<DType, int64_t, int64_t>> {};

TEST_P(WeightTilingShapes, ElementsAreWhereTheViewsReadThemAndPaddingIsZero) {
  const auto [dtype, rows, cols] = GetParam();
  const std::vector<uint16_t> bits = counting_matrix(dtype, rows, cols);
  const WeightView row_major{bits.data(), dtype, rows, cols};
  const weight_tiling::TiledWeight tiled = weight_tiling::tiled_copy(row_major);
  ASSERT_EQ(tiled.view.layout, WeightLayout::Tiled);
  ASSERT_EQ(static_cast<int64_t>(tiled.storage.size()), weight_tiling::tiled_elements(rows, cols));
  std::vector<float> want(static_cast<size_t>(cols)), got(static_cast<size_t>(cols));
  std::set<int64_t> used;
  for (int64_t r = 0; r < rows; ++r) {
    row_major.row_to_float(r, want.data());
    tiled.view.row_to_float(r, got.data());
    ASSERT_EQ(got, want) << "row " << r;
    for (int64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(tiled.view.at(r, c), row_major.at(r, c)) << r << ", " << c;
      used.insert(weight_tiling::row_offset(r, cols) + weight_tiling::chunk_offset(c));
    }
  }
  ASSERT_EQ(static_cast<int64_t>(used.size()), rows * cols) << "two elements share a place";
  for (int64_t i = 0; i < static_cast<int64_t>(tiled.storage.size()); ++i) {
    if (!used.count(i)) {
      ASSERT_EQ(tiled.storage[i], 0) << "padding at " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OddAndWholeShapes, WeightTilingShapes,
                         ::testing::Combine(::testing::Values(DType::BF16, DType::F16),
                                            ::testing::Values(int64_t{1}, int64_t{3}, int64_t{4}, int64_t{9}),
                                            ::testing::Values(int64_t{1}, int64_t{31}, int64_t{32}, int64_t{33},
                                                              int64_t{70})));

// Within a row group the rows' chunks interleave; groups follow each other whole.
TEST(WeightTiling, GroupsAreStoredChunkByChunk) {
  EXPECT_EQ(weight_tiling::row_offset(1, 64), 32);
  EXPECT_EQ(weight_tiling::chunk_offset(32), 128);
  EXPECT_EQ(weight_tiling::row_offset(5, 64), 4 * 64 + 32);
  EXPECT_EQ(weight_tiling::group_stride(70), 4 * 96);
}

TEST(WeightTiling, RefusesFloat32AndTiledMatrices) {
  const std::vector<float> f32(6);
  EXPECT_THROW(weight_tiling::tiled_copy(WeightView{f32.data(), DType::F32, 2, 3}), Error);
  const std::vector<uint16_t> bits = counting_matrix(DType::BF16, 2, 3);
  const weight_tiling::TiledWeight tiled = weight_tiling::tiled_copy(WeightView{bits.data(), DType::BF16, 2, 3});
  EXPECT_THROW(weight_tiling::tiled_copy(tiled.view), Error);
}

}  // namespace
}  // namespace moe
