// The half-precision GEMM against reference::linear_rows in double precision, with the kernels of
// every instruction set this CPU runs: every token count from 1 to 40 and larger ones past the
// token slab, bf16 and f16, a row range that starts and ends mid-tile and mid-block, a column count
// that is not a multiple of 8 or 16, and an output row stride wider than the rows computed.
// Tolerances are relative to Σ|x·w|, the size float32 rounding scales with.
#include "kernels/half_gemm.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "common/error.h"
#include "gemm_rows_check.h"
#include "kernels/reference.h"
#include "kernels/half_matrix.h"

namespace moe {
namespace {

using test::expect_gemm_rows;
using test::HalfMatrix;
using test::random_activations;

constexpr float kSentinel = -12345.0f;

// Runs half_gemm_rows for rows [row_begin, row_end) into columns [y_offset, y_offset + rows) of a
// y whose row stride is out_stride, and checks every computed value against reference::linear_rows
// (over the row-major matrix, so the expected values owe nothing to the tiling) and every other
// element of y against the sentinel it was filled with.
void expect_matches_reference(GemmIsa isa, const HalfMatrix& w, int64_t tokens, int64_t row_begin,
                              int64_t row_end, int64_t out_stride, int64_t y_offset) {
  const std::vector<float> x = random_activations(tokens, w.cols, static_cast<uint32_t>(tokens));
  PackedActivations packed;
  pack_activations(x.data(), tokens, w.cols, w.dtype, packed, isa);
  std::vector<float> y(static_cast<size_t>(tokens * out_stride), kSentinel);
  half_gemm_rows(packed, w.view(), row_begin, row_end, y.data() + y_offset, out_stride);
  const int64_t rows = row_end - row_begin;
  std::vector<double> want(static_cast<size_t>(tokens * rows)), magnitude(want.size());
  reference::linear_rows(x.data(), tokens, w.row_major(), row_begin, row_end, want.data(), magnitude.data());
  expect_gemm_rows(
      y, {tokens, out_stride, y_offset, row_begin, row_end}, kSentinel,
      [&](int64_t i) { return std::pair{want[i], 1e-5 * magnitude[i]}; },
      [&](int64_t t, int64_t r) {
        return std::string(gemm_isa_name(isa)) + " " + dtype_name(w.dtype) + " " + std::to_string(tokens) +
               " tokens, token " + std::to_string(t) + ", row " + std::to_string(r);
      });
}

// The instruction sets whose kernels this CPU runs (AVX2 always).
std::vector<GemmIsa> supported_isas() {
  std::vector<GemmIsa> isas;
  for (const GemmIsa isa : {GemmIsa::Avx2, GemmIsa::Avx512})
    if (gemm_isa_supported(isa)) isas.push_back(isa);
  return isas;
}

class HalfGemmTokens : public ::testing::TestWithParam<std::tuple<GemmIsa, DType, int64_t>> {};

// 53 rows from 5: neither end on a row group or tile (4 or 8 rows) or block (24 rows) boundary; 203 columns:
// 6 whole chunks of 32 (12 of 16) and 11 more; y 70 wide, the rows written from column 6.
TEST_P(HalfGemmTokens, MatchesDoublePrecisionOnRowRangeAndColumnRemainder) {
  const auto [isa, dtype, tokens] = GetParam();
  const HalfMatrix w(dtype, 60, 203, 1);
  expect_matches_reference(isa, w, tokens, 5, 58, 70, 6);
}

TEST_P(HalfGemmTokens, MatchesDoublePrecisionOnWholeChunks) {
  const auto [isa, dtype, tokens] = GetParam();
  const HalfMatrix w(dtype, 50, 256, 2);
  expect_matches_reference(isa, w, tokens, 0, 50, 50, 0);
}

std::vector<int64_t> token_counts() {
  std::vector<int64_t> counts;
  for (int64_t t = 1; t <= 40; ++t) counts.push_back(t);
  for (int64_t t : {64, 97, 191, 192, 193, 400}) counts.push_back(t);  // around the 192-token slab
  return counts;
}

INSTANTIATE_TEST_SUITE_P(EveryTokenCount, HalfGemmTokens,
                         ::testing::Combine(::testing::ValuesIn(supported_isas()),
                                            ::testing::Values(DType::BF16, DType::F16),
                                            ::testing::ValuesIn(token_counts())));

// Few columns: less than one chunk, exactly one, a chunk and a bit, for both chunk widths.
TEST(HalfGemm, NarrowRowsLeaveNoGarbage) {
  for (const GemmIsa isa : supported_isas())
    for (const DType dtype : {DType::BF16, DType::F16})
      for (const int64_t cols : {1, 7, 8, 15, 16, 17, 31, 32, 33, 65})
        for (const int64_t tokens : {1, 2, 3, 5, 7}) {
          SCOPED_TRACE(::testing::Message() << gemm_isa_name(isa) << " " << dtype_name(dtype) << " cols " << cols
                                            << " tokens " << tokens);
          expect_matches_reference(isa, HalfMatrix(dtype, 11, cols, 3), tokens, 0, 11, 13, 1);
        }
}

// NaN right after the tiled matrix: no tile may read past its padded rows and columns.
TEST(HalfGemm, DoesNotReadPastTheLastRow) {
  for (const GemmIsa isa : supported_isas())
    for (const DType dtype : {DType::BF16, DType::F16})
      for (const int64_t tokens : {1, 2, 3, 6}) {
        SCOPED_TRACE(::testing::Message() << gemm_isa_name(isa) << " " << dtype_name(dtype) << " tokens " << tokens);
        const HalfMatrix w(dtype, 9, 37, 4, 64);
        expect_matches_reference(isa, w, tokens, 0, 9, 9, 0);
      }
}

// Unless MOE_GEMM_ISA says otherwise, the kernels are the widest this CPU runs.
TEST(HalfGemm, PrefersTheWidestSupportedInstructionSet) {
  if (std::getenv("MOE_GEMM_ISA")) GTEST_SKIP() << "MOE_GEMM_ISA chooses the instruction set";
  const GemmIsa widest = gemm_isa_supported(GemmIsa::Avx512Bf16) ? GemmIsa::Avx512Bf16
                         : gemm_isa_supported(GemmIsa::Avx512)   ? GemmIsa::Avx512
                                                                 : GemmIsa::Avx2;
  EXPECT_EQ(preferred_gemm_isa(), widest);
}

TEST(HalfGemm, NoTokensWritesNothing) {
  const HalfMatrix w(DType::BF16, 8, 16, 5);
  PackedActivations packed;
  pack_activations(nullptr, 0, 16, DType::BF16, packed);
  std::vector<float> y(8, kSentinel);
  half_gemm_rows(packed, w.view(), 0, 8, y.data(), 8);
  for (float v : y) EXPECT_EQ(v, kSentinel);
}

TEST(HalfGemm, RejectsFloat32AndMismatchedPacking) {
  PackedActivations packed;
  const std::vector<float> x = random_activations(2, 16, 6);
  EXPECT_THROW(pack_activations(x.data(), 2, 16, DType::F32, packed), Error);
  pack_activations(x.data(), 2, 16, DType::F16, packed);
  const HalfMatrix bf16(DType::BF16, 4, 16, 7), wider(DType::F16, 4, 32, 8);
  std::vector<float> y(8);
  EXPECT_THROW(half_gemm_rows(packed, bf16.view(), 0, 4, y.data(), 4), Error);
  EXPECT_THROW(half_gemm_rows(packed, wider.view(), 0, 4, y.data(), 4), Error);
}

TEST(HalfGemm, RejectsWeightsThatAreNotTiled) {
  const HalfMatrix w(DType::BF16, 4, 16, 9);
  PackedActivations packed;
  const std::vector<float> x = random_activations(2, 16, 10);
  pack_activations(x.data(), 2, 16, DType::BF16, packed);
  std::vector<float> y(8);
  EXPECT_THROW(half_gemm_rows(packed, w.row_major(), 0, 4, y.data(), 4), Error);
}

}  // namespace
}  // namespace moe
