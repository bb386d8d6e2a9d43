#pragma once
// A read-only view of a weight matrix as it lies in memory: float32 matrices row-major (usually
// inside the memory-mapped checkpoint), half-precision ones tiled at load into the order the GEMM
// reads them (kernels/weight_tiling.h). Weights keep their storage dtype; kernels widen to float32
// as they read, so a bf16 checkpoint costs bf16 bytes of memory and bandwidth.
#include <cstdint>
#include <string>
#include <vector>

namespace moe {

enum class DType : uint8_t { F32, BF16, F16 };

// RowMajor: row r's columns one after another, rows one after another (as in a checkpoint).
// Tiled: see kernels/weight_tiling.h; only half-precision matrices are tiled.
enum class WeightLayout : uint8_t { RowMajor, Tiled };

const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);

struct WeightView {
  const void* data = nullptr;
  DType dtype = DType::F32;
  int64_t rows = 0;  // output features (torch Linear's first dim)
  int64_t cols = 0;  // input features
  WeightLayout layout = WeightLayout::RowMajor;

  bool empty() const { return data == nullptr; }
  // Row r widened to float32 into out[cols], in either layout.
  void row_to_float(int64_t r, float* out) const;
  // Element (r, c) widened to float32.
  float at(int64_t r, int64_t c) const;
};

// A 1-D parameter (norm scale, bias) widened to float32 once at load: these are tiny.
using VectorParam = std::vector<float>;

float bf16_to_float(uint16_t bits);
float f16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);  // round to nearest even

}  // namespace moe
