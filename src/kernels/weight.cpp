#include "kernels/weight.h"

#include <cstring>
#include <immintrin.h>

namespace moe {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
  }
  return "?";
}

size_t dtype_size(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

float bf16_to_float(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &wide, 4);
  return out;
}

float f16_to_float(uint16_t bits) { return _cvtsh_ss(bits); }

uint16_t float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

void WeightView::row_to_float(int64_t r, float* out) const {
  const int64_t n = cols;
  switch (dtype) {
    case DType::F32:
      std::memcpy(out, static_cast<const float*>(data) + r * n, n * sizeof(float));
      return;
    case DType::BF16: {
      const uint16_t* src = static_cast<const uint16_t*>(data) + r * n;
      int64_t c = 0;
      for (; c + 8 <= n; c += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c));
        __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
        _mm256_storeu_ps(out + c, _mm256_castsi256_ps(w));
      }
      for (; c < n; ++c) out[c] = bf16_to_float(src[c]);
      return;
    }
    case DType::F16: {
      const uint16_t* src = static_cast<const uint16_t*>(data) + r * n;
      int64_t c = 0;
      for (; c + 8 <= n; c += 8)
        _mm256_storeu_ps(out + c, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c))));
      for (; c < n; ++c) out[c] = f16_to_float(src[c]);
      return;
    }
  }
}

float WeightView::at(int64_t r, int64_t c) const {
  const int64_t i = r * cols + c;
  switch (dtype) {
    case DType::F32: return static_cast<const float*>(data)[i];
    case DType::BF16: return bf16_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::F16: return f16_to_float(static_cast<const uint16_t*>(data)[i]);
  }
  return 0.0f;
}

}  // namespace moe
