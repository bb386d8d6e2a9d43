#include "kernels/exp_sum.h"

#include <immintrin.h>

#include "kernels/simd.h"
#include "kernels/vector_exp.h"

namespace moe {
namespace {

// Terms summed in float lanes before the running total in double takes them: 1024 terms of at
// most 1 lose nothing that matters in float32.
constexpr int64_t kBlock = 1024;

}  // namespace

double sum_of_exps(const float* x, int64_t n, float shift, float scale, float* out) {
  const __m256 shift8 = _mm256_set1_ps(shift), scale8 = _mm256_set1_ps(scale);
  double total = 0.0;
  int64_t i = 0;
  for (int64_t block_end = kBlock; i + 8 <= n; block_end += kBlock) {
    __m256 sums = _mm256_setzero_ps();
    for (; i + 8 <= n && i < block_end; i += 8) {
      const __m256 term = simd::exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), shift8), scale8));
      if (out) _mm256_storeu_ps(out + i, term);
      sums = _mm256_add_ps(sums, term);
    }
    total += simd::horizontal_sum(sums);
  }
  if (i < n) {  // the last partial vector, through a lane mask (masked lanes read and write nothing)
    const __m256i mask = simd::lanes_below(n - i);
    const __m256 arg = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, mask), shift8), scale8);
    const __m256 term = _mm256_and_ps(simd::exp8(arg), _mm256_castsi256_ps(mask));
    if (out) _mm256_maskstore_ps(out + i, mask, term);
    total += simd::horizontal_sum(term);
  }
  return total;
}

}  // namespace moe
