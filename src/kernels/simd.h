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

}  // namespace moe::simd
