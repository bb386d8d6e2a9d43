// Bf16 products (KernelDType::BF16) against a double-precision reference that rounds the
// activations to bf16 first: the vdpbf16ps tiles (AVX-512 BF16) and the float32 tiles on rounded
// activations (AVX-512F, AVX2), at 1..8, 13, 64 and 193 tokens (past the 192-token slab), a row
// range that starts and ends mid-tile, column counts with tails, and through linear().
//
// Tolerance: every product of two bf16 numbers is exact in float32 (8-bit by 8-bit significands),
// so the only error is float32 summation. Each output is at most cols / 8 additions deep in a lane
// (AVX2: two FMAs per 16-column step; vdpbf16ps: two adds per 32-column step), then at most 4 more
// folding the lanes, each add's error at most 2^-24 of a partial sum, itself at most Σ|x·w|: so
// |error| <= (cols / 8 + 16) · 2^-24 · Σ|x·w| (16 for margin). Unrounded activations would miss the
// reference by about 2^-9 · Σ|x·w| / √cols, far outside it for these shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "gemm_rows_check.h"
#include "kernels/half_gemm.h"
#include "kernels/half_matrix.h"
#include "kernels/linear.h"
#include "kernels/reference.h"

namespace moe {
namespace {

using test::expect_gemm_rows;
using test::HalfMatrix;
using test::random_activations;

constexpr float kSentinel = -12345.0f;

std::vector<float> rounded_to_bf16(std::vector<float> x) {
  for (float& v : x) v = bf16_to_float(float_to_bf16(v));
  return x;
}

double tolerance(int64_t cols, double magnitude) { return (cols / 8 + 16) * std::ldexp(magnitude, -24); }

// The reference's y for rows [row_begin, row_end) and its Σ|x·w|, on activations rounded to bf16.
struct Expected {
  std::vector<double> y, magnitude;
};
Expected bf16_reference(const std::vector<float>& x, int64_t tokens, const HalfMatrix& w, int64_t row_begin,
                        int64_t row_end) {
  const std::vector<float> rounded = rounded_to_bf16(x);
  Expected want{std::vector<double>(static_cast<size_t>(tokens * (row_end - row_begin))), {}};
  want.magnitude.resize(want.y.size());
  reference::linear_rows(rounded.data(), tokens, w.row_major(), row_begin, row_end, want.y.data(),
                         want.magnitude.data());
  return want;
}

// half_gemm_rows with bf16 products for rows [row_begin, row_end) into columns y_offset.. of a y
// out_stride wide: every computed value within tolerance of the reference, every other untouched.
void expect_bf16_products(GemmIsa isa, const HalfMatrix& w, int64_t tokens, int64_t row_begin, int64_t row_end,
                          int64_t out_stride, int64_t y_offset) {
  const std::vector<float> x = random_activations(tokens, w.cols, static_cast<uint32_t>(tokens + 7));
  PackedActivations packed;
  pack_activations(x.data(), tokens, w.cols, DType::BF16, packed, isa, KernelDType::BF16);
  std::vector<float> y(static_cast<size_t>(tokens * out_stride), kSentinel);
  half_gemm_rows(packed, w.bf16_products_view(), row_begin, row_end, y.data() + y_offset, out_stride);
  const Expected want = bf16_reference(x, tokens, w, row_begin, row_end);
  expect_gemm_rows(
      y, {tokens, out_stride, y_offset, row_begin, row_end}, kSentinel,
      [&](int64_t i) { return std::pair{want.y[i], tolerance(w.cols, want.magnitude[i])}; },
      [&](int64_t t, int64_t r) {
        return std::string(gemm_isa_name(isa)) + " " + std::to_string(tokens) + " tokens, token " +
               std::to_string(t) + ", row " + std::to_string(r);
      });
}

class Bf16Products : public ::testing::TestWithParam<std::tuple<GemmIsa, int64_t>> {
 protected:
  void SetUp() override {
    if (!gemm_isa_supported(std::get<0>(GetParam())))
      GTEST_SKIP() << "this CPU has no " << gemm_isa_name(std::get<0>(GetParam()));
  }
};

// 53 rows from 5 of 60: neither end on a row group, tile or block; 203 columns: 6 chunks and 11.
TEST_P(Bf16Products, MatchRoundedReferenceOnRowRangeAndColumnTail) {
  const auto [isa, tokens] = GetParam();
  expect_bf16_products(isa, HalfMatrix(DType::BF16, 60, 203, 11), tokens, 5, 58, 70, 6);
}

TEST_P(Bf16Products, MatchRoundedReferenceOnWholeChunks) {
  const auto [isa, tokens] = GetParam();
  expect_bf16_products(isa, HalfMatrix(DType::BF16, 50, 256, 12), tokens, 0, 50, 50, 0);
}

// Fewer columns than a chunk, one, and a bit more: the bf16 padding must add nothing.
TEST_P(Bf16Products, NarrowRowsLeaveNoGarbage) {
  const auto [isa, tokens] = GetParam();
  for (const int64_t cols : {1, 2, 31, 32, 33, 65}) {
    SCOPED_TRACE(::testing::Message() << "cols " << cols);
    expect_bf16_products(isa, HalfMatrix(DType::BF16, 11, cols, 13), tokens, 0, 11, 13, 1);
  }
}

// No tile may read past the tiled matrix (NaN lies right after it).
TEST_P(Bf16Products, DoesNotReadPastTheLastRow) {
  const auto [isa, tokens] = GetParam();
  expect_bf16_products(isa, HalfMatrix(DType::BF16, 9, 37, 14, 64), tokens, 0, 9, 9, 0);
}

INSTANTIATE_TEST_SUITE_P(EveryInstructionSet, Bf16Products,
                         ::testing::Combine(::testing::Values(GemmIsa::Avx512Bf16, GemmIsa::Avx512, GemmIsa::Avx2),
                                            ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 13, 64, 193)));

// linear() multiplies a view marked KernelDType::BF16 with bf16 products on the preferred kernels,
// over the thread pool's row chunks; an unmarked view of the same weights keeps float32 products,
// which miss the rounded reference by far more than its tolerance.
TEST(Bf16Products, LinearFollowsTheViewsKernelDType) {
  const HalfMatrix w(DType::BF16, 300, 1000, 15);
  const int64_t tokens = 5;
  const std::vector<float> x = random_activations(tokens, w.cols, 16);
  const Expected want = bf16_reference(x, tokens, w, 0, w.rows);
  std::vector<float> bf16_y(static_cast<size_t>(tokens * w.rows)), f32_y(bf16_y.size());
  linear(x.data(), tokens, w.bf16_products_view(), bf16_y.data());
  linear(x.data(), tokens, w.view(), f32_y.data());
  int64_t f32_outside = 0;
  for (size_t i = 0; i < want.y.size(); ++i) {
    const double tol = tolerance(w.cols, want.magnitude[i]);
    ASSERT_NEAR(bf16_y[i], want.y[i], tol) << "output " << i;
    f32_outside += std::abs(f32_y[i] - want.y[i]) > tol;
  }
  EXPECT_GT(f32_outside, static_cast<int64_t>(want.y.size()) / 2) << "float32 products look rounded too";
}

TEST(Bf16Products, OnlyForBf16Weights) {
  const std::vector<float> x(64, 1.0f);
  PackedActivations packed;
  for (const DType dtype : {DType::F16, DType::Q8, DType::Q4})
    EXPECT_THROW(pack_activations(x.data(), 1, 64, dtype, packed, preferred_gemm_isa(), KernelDType::BF16), Error)
        << dtype_name(dtype);
}

// Activations packed for one precision are refused by weights marked for the other.
TEST(Bf16Products, KernelDTypeMismatchIsAnError) {
  const HalfMatrix w(DType::BF16, 8, 64, 17);
  const std::vector<float> x = random_activations(2, w.cols, 18);
  std::vector<float> y(16);
  PackedActivations packed;
  pack_activations(x.data(), 2, w.cols, DType::BF16, packed, preferred_gemm_isa(), KernelDType::BF16);
  EXPECT_THROW(half_gemm_rows(packed, w.view(), 0, 8, y.data(), 8), Error);
  pack_activations(x.data(), 2, w.cols, DType::BF16, packed, preferred_gemm_isa(), KernelDType::F32);
  EXPECT_THROW(half_gemm_rows(packed, w.bf16_products_view(), 0, 8, y.data(), 8), Error);
}

// The packing's vector rounding is float_to_bf16's on every kind of value: ties both ways,
// carries into the exponent, the largest finite values, infinities, NaNs whose payload lies only
// in the low bits, denormals, zeros of both signs.
TEST(Bf16Products, PackingRoundsAsFloatToBf16) {
  const std::vector<uint32_t> bits = {0x3f808000, 0x3f818000, 0x3f80ffff, 0x3fffffff, 0x7f7fffff, 0xff7fffff,
                                      0x7f800000, 0xff800000, 0x7f800001, 0xffc00000, 0x00000001, 0x807fffff,
                                      0x00000000, 0x80000000, 0x3f7fffff, 0x40490fdb, 0xc0490fdb};
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * sizeof(float));
  const int64_t cols = static_cast<int64_t>(x.size());
  for (const GemmIsa isa : {GemmIsa::Avx512Bf16, GemmIsa::Avx512, GemmIsa::Avx2}) {
    if (!gemm_isa_supported(isa)) continue;
    PackedActivations packed;
    pack_activations(x.data(), 1, cols, DType::BF16, packed, isa, KernelDType::BF16);
    for (int64_t c = 0; c < cols; ++c) {
      const uint16_t want = float_to_bf16(x[c]);
      if (!packed.bf16_values.empty() && isa == GemmIsa::Avx512Bf16) {
        EXPECT_EQ(packed.bf16_values[c], want) << gemm_isa_name(isa) << " column " << c;
        continue;
      }
      // The float32 tiles' order permutes columns within a chunk: find this value among them.
      const float rounded = bf16_to_float(want);
      const auto same = [&](float v) { return std::memcmp(&v, &rounded, sizeof v) == 0; };
      EXPECT_TRUE(std::any_of(packed.values.begin(), packed.values.end(), same))
          << gemm_isa_name(isa) << " column " << c << " (" << std::hex << bits[c] << ")";
    }
  }
}

TEST(KernelDType, ParsesItsThreeNames) {
  EXPECT_EQ(parse_kernel_dtype("float32"), KernelDType::F32);
  EXPECT_EQ(parse_kernel_dtype("bf16"), KernelDType::BF16);
  EXPECT_EQ(parse_kernel_dtype("int8"), KernelDType::Int8);
  EXPECT_STREQ(kernel_dtype_name(KernelDType::BF16), "bf16");
  EXPECT_STREQ(kernel_dtype_name(KernelDType::Int8), "int8");
  EXPECT_THROW(parse_kernel_dtype("fp16"), Error);
  EXPECT_THROW(parse_kernel_dtype("BF16"), Error);
}

}  // namespace
}  // namespace moe
