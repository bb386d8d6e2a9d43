#pragma once
// AVX2 helpers shared by the kernels (x86-64-v3: AVX2 + FMA + F16C). Only kernel .cpp files
// include this; it pulls in <immintrin.h>.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace moe::simd {

// The sum of the eight lanes.
inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// A mask with lanes 0..count-1 set (count may be <= 0 or >= 8), for masked loads and stores of a
// row's last partial vector.
inline __m256i lanes_below(int64_t count) {
  const int clamped = static_cast<int>(std::clamp<int64_t>(count, 0, 8));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(clamped), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// v's lanes rounded to the nearest bf16 value (ties to even), as float_to_bf16 does, and widened
// back to float32: the low 16 bits cleared after adding half their range plus the kept part's
// lowest bit. A NaN is truncated with its quiet bit set, so that it stays a NaN (rounding
// could carry it into infinity, truncating could leave infinity).
inline __m256 round_to_bf16(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i kept_lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i biased = _mm256_add_epi32(bits, _mm256_add_epi32(kept_lsb, _mm256_set1_epi32(0x7fff)));
  const __m256i high_half = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const __m256 rounded = _mm256_castsi256_ps(_mm256_and_si256(biased, high_half));
  const __m256 quiet_nan =
      _mm256_castsi256_ps(_mm256_and_si256(_mm256_or_si256(bits, _mm256_set1_epi32(0x00400000)), high_half));
  return _mm256_blendv_ps(rounded, quiet_nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

}  // namespace moe::simd
