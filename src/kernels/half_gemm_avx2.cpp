// The half-precision GEMM's AVX2 kernels (x86-64-v3, the build's baseline): register tiles of 16
// columns a step, and the single-token GEMV every instruction set uses.
#include <immintrin.h>

#include "kernels/half_gemm_kernels.h"
#include "kernels/simd.h"

namespace moe::half_gemm_kernels {
namespace {

// Tile shapes, rows x tokens: a tile keeps rows x tokens accumulators, the rows' widened weights,
// one activation vector and the bf16 mask in the 16 ymm registers of AVX2. Measured on Zen
// (weights in L2, GFLOP/s of one core): 4x2 and 3x3 run at 105-108, near the FMA peak; 4x3
// spills (60) and 2x4 .. 2x6 run at 93-100, so tokens are taken two or three at a time.
constexpr int kMaxRows = 4;
constexpr int kMinTokens = 2;
constexpr int kMaxTokens = 3;
static_assert(kMaxTokens <= kMaxTileTokens, "TileSet::rows_for_tokens covers every group size");
static_assert(kRowBlock % 4 == 0 && kRowBlock % 3 == 0, "row blocks hold whole tiles");

// bf16 widened without a shuffle: the 32-bit lane i of a 16-value load holds value 2i in its low
// half and value 2i + 1 in its high half; shifting left by 16 makes value 2i a float32, and
// masking off the low half makes value 2i + 1 one. The activations are packed in that order.
struct Bf16Weights {
  static constexpr bool kInterleaved = true;
  static __m256 first_half(const uint16_t* p) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
  }
  static __m256 second_half(const uint16_t* p) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
};

// f16 widened in column order by F16C.
struct F16Weights {
  static constexpr bool kInterleaved = false;
  static __m256 first_half(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static __m256 second_half(const uint16_t* p) { return first_half(p + 8); }
};

// AVX2's vectors: 8 floats, 16 half-precision columns a step.
struct Vec {
  using type = __m256;
  static constexpr int64_t kChunk = 16;
  static __m256 zero() { return _mm256_setzero_ps(); }
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static __m256 fma(__m256 a, __m256 b, __m256 acc) { return _mm256_fmadd_ps(a, b, acc); }
  static float sum(__m256 v) { return simd::horizontal_sum(v); }
  // [Σa, Σb, Σc, Σd] in three horizontal adds.
  static __m128 sums4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 sums = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(sums), _mm256_extractf128_ps(sums, 1));
  }
};

}  // namespace
}  // namespace moe::half_gemm_kernels

#include "kernels/half_gemm_tile.inc"

namespace moe::half_gemm_kernels {
namespace {

template <class Weights>
constexpr TileSet kTileSet = {Vec::kChunk, Weights::kInterleaved, kMaxTokens, {0, 0, 4, 3},
                              TileTable<Tiles<Vec, Weights>, kMaxRows, kMinTokens, kMaxTokens>::at};

// A row at a time: a single stream in memory order, which the hardware prefetcher follows best
// (it loses track of a tile's side-by-side rows). Its loads are 8 values wide: checkpoint tensors
// sit 16 bytes off a cache line, where half of 16-value loads straddle two lines, and a GEMV in L2
// ran 20% slower with them.
template <DType kDType>
void gemv_rows_of(const float* x, int64_t cols, const uint16_t* weights, int64_t row_begin, int64_t row_end,
                  float* y) {
  static_assert(kGemvChunk == 16, "the remainder below is two 8-value steps");
  constexpr int kChains = 4;  // independent FMA chains, enough to hide the FMA latency
  const int64_t whole = cols / kGemvChunk * kGemvChunk;
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint16_t* w = weights + r * cols;
    __m256 acc[kChains];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 * kChains <= whole; c += 8 * kChains)
      for (int k = 0; k < kChains; ++k)
        acc[k] = _mm256_fmadd_ps(simd::load8_widened(w + c + 8 * k, kDType), _mm256_loadu_ps(x + c + 8 * k), acc[k]);
    for (; c < whole; c += 8)
      acc[0] = _mm256_fmadd_ps(simd::load8_widened(w + c, kDType), _mm256_loadu_ps(x + c), acc[0]);
    if (whole < cols) {
      uint16_t tail[kGemvChunk];
      copy_tail(w, cols, kGemvChunk, tail);
      for (int k = 0; k < 2; ++k)
        acc[k] = _mm256_fmadd_ps(simd::load8_widened(tail + 8 * k, kDType), _mm256_loadu_ps(x + whole + 8 * k), acc[k]);
    }
    for (int k = 1; k < kChains; ++k) acc[0] = _mm256_add_ps(acc[0], acc[k]);
    y[r - row_begin] = simd::horizontal_sum(acc[0]);
  }
}

}  // namespace

const TileSet& avx2_tiles(DType dtype) {
  return dtype == DType::BF16 ? kTileSet<Bf16Weights> : kTileSet<F16Weights>;
}

void gemv_rows(const float* x, int64_t cols, const uint16_t* weights, DType dtype, int64_t row_begin,
               int64_t row_end, float* y) {
  if (dtype == DType::BF16)
    gemv_rows_of<DType::BF16>(x, cols, weights, row_begin, row_end, y);
  else
    gemv_rows_of<DType::F16>(x, cols, weights, row_begin, row_end, y);
}

}  // namespace moe::half_gemm_kernels
