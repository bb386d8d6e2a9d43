#pragma once
// Test matrices for the half-precision GEMM tests: random tiled bf16/f16 weights and activations.
#include <immintrin.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/weight.h"
#include "kernels/weight_tiling.h"

namespace moe::test {

// A weight matrix in one half-precision dtype, tiled; `spare` more elements past the tiled matrix
// hold NaN, which a kernel reading past its end would pick up.
struct HalfMatrix {
  DType dtype;
  int64_t rows, cols;
  std::vector<uint16_t> bits;  // row-major
  std::vector<uint16_t> tiled;

  HalfMatrix(DType dtype_, int64_t rows_, int64_t cols_, uint32_t seed, int64_t spare = 0)
      : dtype(dtype_), rows(rows_), cols(cols_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float v = dist(rng);
      bits.push_back(dtype == DType::BF16 ? float_to_bf16(v) : _cvtss_sh(v, 0));
    }
    const uint16_t nan = dtype == DType::BF16 ? 0x7FC0 : 0x7E00;
    tiled.assign(static_cast<size_t>(weight_tiling::tiled_elements(rows, cols) + spare), nan);
    weight_tiling::tile_into(row_major(), tiled.data());
  }
  WeightView row_major() const { return WeightView{bits.data(), dtype, rows, cols}; }
  WeightView view() const { return WeightView{tiled.data(), dtype, rows, cols, WeightLayout::Tiled}; }
  // The tiled view, multiplied with bf16 products by linear().
  WeightView bf16_products_view() const {
    WeightView tiled_view = view();
    tiled_view.kernel_dtype = KernelDType::BF16;
    return tiled_view;
  }
};

inline std::vector<float> random_activations(int64_t tokens, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(tokens * cols));
  for (float& v : x) v = normal(rng);
  return x;
}

}  // namespace moe::test
