// A token's product is the same, bit for bit, however it is batched: alone or beside up to 9 other
// tokens, and whether the rows computed start on a row group or inside one. The GEMMs cut a batch
// into register tiles of different shapes (tokens per tile, rows per tile), so this holds only if
// every shape adds a row's products in one order; a served request's logits and routing must not
// depend on which other requests shared its step. Every weight dtype, kernel dtype and instruction
// set this CPU runs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/half_gemm.h"
#include "kernels/half_matrix.h"
#include "kernels/quantized_gemm.h"
#include "kernels/quantized_weight.h"

namespace moe {
namespace {

constexpr int64_t kRows = 37, kCols = 203, kPoolTokens = 10;

struct Case {
  GemmIsa isa;
  DType dtype;
  KernelDType kernel_dtype;
  std::string name() const {
    return std::string(gemm_isa_name(isa)) + " " + dtype_name(dtype) + " " + kernel_dtype_name(kernel_dtype);
  }
};

std::vector<Case> supported_cases() {
  std::vector<Case> cases;
  for (const GemmIsa isa : {GemmIsa::Avx2, GemmIsa::Avx512}) {
    if (!gemm_isa_supported(isa)) continue;
    for (const DType dtype : {DType::BF16, DType::F16, DType::Q8, DType::Q4}) cases.push_back({isa, dtype, KernelDType::F32});
    cases.push_back({isa, DType::BF16, KernelDType::BF16});
    for (const DType dtype : {DType::Q8, DType::Q4}) cases.push_back({isa, dtype, KernelDType::Int8});
  }
  if (gemm_isa_supported(GemmIsa::Avx512Bf16)) cases.push_back({GemmIsa::Avx512Bf16, DType::BF16, KernelDType::BF16});
  return cases;
}

// The case's weights: random half-precision values tiled, or random int8/int4 values with one scale
// per 32 columns.
struct Weights {
  test::HalfMatrix half;
  quantized::QuantizedMatrix quantized;
  WeightView view;

  explicit Weights(const Case& c) : half(c.dtype == DType::F16 ? DType::F16 : DType::BF16, kRows, kCols, 7) {
    if (quantized::is_quantized(c.dtype)) {
      std::mt19937 rng(8);
      std::uniform_int_distribution<int> value(c.dtype == DType::Q8 ? -128 : -8, c.dtype == DType::Q8 ? 127 : 7);
      std::uniform_real_distribution<float> scale(0.001f, 0.1f);
      const int64_t group = quantized::storage_group_size(32, kCols, "test");
      std::vector<int8_t> values(static_cast<size_t>(kRows * kCols));
      for (int8_t& v : values) v = static_cast<int8_t>(value(rng));
      std::vector<float> scales(static_cast<size_t>(kRows * quantized::num_groups(kCols, group)));
      for (float& s : scales) s = scale(rng);
      quantized = quantized::quantized_copy(c.dtype, values, kRows, kCols, std::move(scales), group);
      view = quantized.view;
    } else {
      view = half.view();
    }
    view.kernel_dtype = c.kernel_dtype;
  }
};

// y[tokens, rows [row_begin, kRows)] for the first `tokens` tokens of x.
std::vector<float> products(const Case& c, const Weights& w, const std::vector<float>& x, int64_t tokens,
                            int64_t row_begin) {
  PackedActivations packed;
  pack_activations(x.data(), tokens, kCols, c.dtype, packed, c.isa, c.kernel_dtype);
  const int64_t rows = kRows - row_begin;
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  if (quantized::is_quantized(c.dtype))
    quantized_gemm_rows(packed, w.view, row_begin, kRows, y.data(), rows);
  else
    half_gemm_rows(packed, w.view, row_begin, kRows, y.data(), rows);
  return y;
}

TEST(GemmBatchInvariance, ATokensProductsDoNotDependOnItsBatchOrRowRange) {
  const std::vector<float> x = test::random_activations(kPoolTokens, kCols, 9);
  for (const Case& c : supported_cases()) {
    SCOPED_TRACE(c.name());
    const Weights w(c);
    // Each token alone, every row.
    std::vector<std::vector<float>> alone;
    for (int64_t t = 0; t < kPoolTokens; ++t) {
      const std::vector<float> token(x.begin() + t * kCols, x.begin() + (t + 1) * kCols);
      alone.push_back(products(c, w, token, 1, 0));
    }
    for (int64_t tokens = 1; tokens <= kPoolTokens; ++tokens)
      for (const int64_t row_begin : {0, 1, 2, 3, 5, 26}) {
        const std::vector<float> y = products(c, w, x, tokens, row_begin);
        const int64_t rows = kRows - row_begin;
        for (int64_t t = 0; t < tokens; ++t)
          ASSERT_EQ(std::memcmp(&y[t * rows], &alone[t][row_begin], rows * sizeof(float)), 0)
              << "token " << t << " of " << tokens << ", rows from " << row_begin;
      }
  }
}

}  // namespace
}  // namespace moe
