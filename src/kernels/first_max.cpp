#include "kernels/first_max.h"

#include <immintrin.h>

#include <limits>

namespace moe {

int64_t first_max(const float* x, int64_t n) {
  int64_t top = 0;
  float top_value = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  if (n >= 8 && n <= std::numeric_limits<int32_t>::max()) {
    // Each lane keeps its own first maximum (replaced only by a strictly greater value, so the
    // lowest index of equal ones stays); the lanes are merged the same way after the loop.
    __m256 best = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256i best_index = _mm256_setzero_si256();
    __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i step = _mm256_set1_epi32(8);
    for (; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      const __m256 greater = _mm256_cmp_ps(v, best, _CMP_GT_OQ);  // false for NaN
      best = _mm256_blendv_ps(best, v, greater);
      best_index = _mm256_castps_si256(
          _mm256_blendv_ps(_mm256_castsi256_ps(best_index), _mm256_castsi256_ps(index), greater));
      index = _mm256_add_epi32(index, step);
    }
    alignas(32) float values[8];
    alignas(32) int32_t indices[8];
    _mm256_store_ps(values, best);
    _mm256_store_si256(reinterpret_cast<__m256i*>(indices), best_index);
    for (int lane = 0; lane < 8; ++lane)
      if (values[lane] > top_value || (values[lane] == top_value && indices[lane] < top)) {
        top_value = values[lane];
        top = indices[lane];
      }
  }
  for (; i < n; ++i)
    if (x[i] > top_value) {
      top_value = x[i];
      top = i;
    }
  return top;
}

}  // namespace moe
