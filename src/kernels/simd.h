#pragma once
// AVX2 helpers shared by the kernels (x86-64-v3: AVX2 + FMA + F16C). Only kernel .cpp files
// include this; it pulls in <immintrin.h>.
#include <immintrin.h>

#include <cstdint>

#include "kernels/weight.h"

namespace moe::simd {

// The sum of the eight lanes.
inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Eight half-precision values (bf16 or f16) at p, widened to float32.
inline __m256 load8_widened(const uint16_t* p, DType dtype) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (dtype == DType::F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

}  // namespace moe::simd
