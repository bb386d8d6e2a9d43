#pragma once
// A read-only view of a weight matrix as it lies in memory: float32 matrices row-major (usually
// inside the memory-mapped checkpoint), half-precision ones tiled at load into the order the GEMM
// reads them (kernels/weight_tiling.h). Weights keep their storage dtype; kernels widen to float32
// as they read, so a bf16 checkpoint costs bf16 bytes of memory and bandwidth. Quantized matrices
// (Q8, Q4) are integers with a float32 scale per row and group of columns (kernels/quantized_weight.h).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_dtype.h"

namespace moe {

// I32 is only a checkpoint tensor's element type (GPTQ's packed integers), never a matrix's.
// I64 and Bool are read only as integer tables (an EAGLE-3 head's d2t and t2d), never as weights.
enum class DType : uint8_t { F32, BF16, F16, I32, Q8, Q4, I64, Bool };

// RowMajor: row r's columns one after another, rows one after another (as in a checkpoint).
// Tiled: see kernels/weight_tiling.h; half-precision and quantized matrices are tiled.
enum class WeightLayout : uint8_t { RowMajor, Tiled };

const char* dtype_name(DType dtype);
// Bytes of one element; Q4, two elements a byte, is a moe::Error.
size_t dtype_size(DType dtype);

struct WeightView {
  const void* data = nullptr;
  DType dtype = DType::F32;
  int64_t rows = 0;  // output features (torch Linear's first dim)
  int64_t cols = 0;  // input features
  WeightLayout layout = WeightLayout::RowMajor;
  const float* scales = nullptr;  // Q8/Q4 only: [rows, groups], row-major
  int64_t group_size = 0;         // Q8/Q4 only: columns sharing a scale
  KernelDType kernel_dtype = KernelDType::F32;  // BF16 (bf16 weights only): linear() multiplies in bf16

  bool empty() const { return data == nullptr; }
  // Row r widened to float32 into out[cols], in either layout.
  void row_to_float(int64_t r, float* out) const;
  // Element (r, c) widened to float32 (a quantized one: value × scale, rounded once).
  float at(int64_t r, int64_t c) const;
};

// A 1-D parameter (norm scale, bias) widened to float32 once at load: these are tiny.
using VectorParam = std::vector<float>;

float bf16_to_float(uint16_t bits);
float f16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);  // round to nearest even
uint16_t float_to_f16(float value);   // round to nearest even

}  // namespace moe
