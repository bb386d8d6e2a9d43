#pragma once
// e^x of eight floats at once (AVX2 + FMA), for softmax: one std::exp call per score costs more
// than the score's dot product. Only kernel .cpp files include this; it pulls in <immintrin.h>.
#include <immintrin.h>

namespace moe::simd {

// ln of the smallest normal float: below it e^x is returned as 0.
inline constexpr float kExpLowestInput = -87.33f;

// e^x per lane, relative error under 2e-7 for kExpLowestInput <= x <= 88, exactly 1 at x = 0,
// 0 below kExpLowestInput and for -inf and NaN (so a masked-out score weighs nothing).
inline __m256 exp8(__m256 x) {
  // x = n·ln2 + r with integer n and |r| <= ln2/2, so e^x = 2^n · e^r. ln2 is split into a
  // 16-bit head, whose product with n is exact, and the rest, so r keeps all its bits.
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
  // e^r by its Taylor series up to r^7/7! (Horner): the first term left out is under 5.3e-9.
  constexpr float kLowerCoefficients[] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
  __m256 poly = _mm256_set1_ps(1.0f / 5040);
  for (const float coefficient : kLowerCoefficients)
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(coefficient));
  // 2^n from its exponent bits; n is in [-126, 127] wherever the result is kept.
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 result = _mm256_mul_ps(poly, _mm256_castsi256_ps(exponent));
  return _mm256_and_ps(result, _mm256_cmp_ps(x, _mm256_set1_ps(kExpLowestInput), _CMP_GE_OQ));
}

}  // namespace moe::simd
