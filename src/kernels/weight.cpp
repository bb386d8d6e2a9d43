#include "kernels/weight.h"

#include <algorithm>
#include <cstring>
#include <immintrin.h>

#include "common/error.h"
#include "kernels/bf16_bits.h"
#include "kernels/quantized_weight.h"
#include "kernels/weight_tiling.h"

namespace moe {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::I32: return "I32";
    case DType::Q8: return "Q8";
    case DType::Q4: return "Q4";
    case DType::I64: return "I64";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::Bool: return 1;
    case DType::BF16:
    case DType::F16: return 2;
    case DType::Q8: return 1;
    case DType::Q4: break;
  }
  throw Error(std::string("dtype_size: ") + dtype_name(dtype) + " elements are not whole bytes");
}

float bf16_to_float(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &wide, 4);
  return out;
}

float f16_to_float(uint16_t bits) { return _cvtsh_ss(bits); }

uint16_t float_to_f16(float value) { return _cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT); }

uint16_t float_to_bf16(float value) { return bf16_bits_nearest_even(value); }

namespace {

// n half-precision values from src widened to float32 into out.
void widen(const uint16_t* src, int64_t n, DType dtype, float* out) {
  int64_t c = 0;
  if (dtype == DType::BF16) {
    for (; c + 8 <= n; c += 8) {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c));
      __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
      _mm256_storeu_ps(out + c, _mm256_castsi256_ps(w));
    }
    for (; c < n; ++c) out[c] = bf16_to_float(src[c]);
    return;
  }
  for (; c + 8 <= n; c += 8)
    _mm256_storeu_ps(out + c, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c))));
  for (; c < n; ++c) out[c] = f16_to_float(src[c]);
}


}  // namespace

void WeightView::row_to_float(int64_t r, float* out) const {
  if (quantized::is_quantized(dtype)) {
    for (int64_t c = 0; c < cols; ++c) out[c] = at(r, c);
    return;
  }
  if (dtype == DType::F32) {
    std::memcpy(out, static_cast<const float*>(data) + r * cols, cols * sizeof(float));
    return;
  }
  const uint16_t* half = static_cast<const uint16_t*>(data);
  if (layout == WeightLayout::RowMajor) {
    widen(half + r * cols, cols, dtype, out);
    return;
  }
  const uint16_t* row = half + weight_tiling::row_offset(r, cols);
  for (int64_t c = 0; c < cols; c += weight_tiling::kChunkCols)
    widen(row + weight_tiling::chunk_offset(c), std::min(weight_tiling::kChunkCols, cols - c), dtype, out + c);
}

float WeightView::at(int64_t r, int64_t c) const {
  if (dtype == DType::F32) return static_cast<const float*>(data)[r * cols + c];
  if (quantized::is_quantized(dtype))
    return static_cast<float>(quantized::stored_value(*this, r, c)) *
           scales[r * quantized::num_groups(cols, group_size) + c / group_size];
  const int64_t offset = layout == WeightLayout::RowMajor
                             ? r * cols + c
                             : weight_tiling::row_offset(r, cols) + weight_tiling::chunk_offset(c);
  const uint16_t bits = static_cast<const uint16_t*>(data)[offset];
  return dtype == DType::BF16 ? bf16_to_float(bits) : f16_to_float(bits);
}

}  // namespace moe
