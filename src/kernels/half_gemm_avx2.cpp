// The half-precision GEMM's AVX2 kernels (x86-64-v3, the build's baseline): register tiles of 16
// columns a step.
#include <immintrin.h>

#include "kernels/half_gemm_kernels.h"
#include "kernels/quantized_weight.h"
#include "kernels/simd.h"

namespace moe::half_gemm_kernels {
namespace {

// Tile shapes, rows x tokens: a tile keeps rows x tokens accumulators, the rows' widened weights,
// one activation vector and the bf16 mask in the 16 ymm registers of AVX2. Measured on Zen
// (weights in L2, GFLOP/s of one core): 4x2 runs at 105-108, near the FMA peak; 4x3 spills (60)
// and 2x4 .. 2x6 run at 93-100. Heights must be 1, 2 or 4 to stay inside the tiled weights' row
// groups, which rules out 3x3; 2x3 made the batch-32 decode step a third slower than 4x2 and 4x1,
// so tokens are taken two at a time (one for the last of an odd count).
constexpr int kMaxRows = 4;
constexpr int kMinTokens = 1;
constexpr int kMaxTokens = 2;
static_assert(kMaxTokens <= kMaxTileTokens, "TileSet::rows_for_tokens covers every group size");
static_assert(kRowBlock % 4 == 0, "row blocks hold whole tiles");

// bf16 widened in column order, eight values a zero-extension and shift. (The AVX-512 kernels' shuffle-free
// widening, one load feeding both halves, keeps the raw load alive beside the widened halves; in
// AVX2's 16 registers that spilled the 4x2 tile's accumulators and cost 40% of its speed.)
struct Bf16Weights {
  static constexpr bool kInterleaved = false;
  static __m256 first_half(const uint16_t* p) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  }
  static __m256 second_half(const uint16_t* p) { return first_half(p + 8); }
};

// f16 widened in column order by F16C.
struct F16Weights {
  static constexpr bool kInterleaved = false;
  static __m256 first_half(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static __m256 second_half(const uint16_t* p) { return first_half(p + 8); }
};

// int8 values sign-extended, 8 a conversion, times the scale.
struct Q8Values {
  static constexpr int64_t kChunkBytes = 32;
  using Scale = float;
  static float scale(float s) { return s; }
  static __m256 widen(const uint8_t* p, int part, float s) {
    const __m256 values = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * part))));
    return _mm256_mul_ps(values, _mm256_set1_ps(s));
  }
};

// int4 values: 8 bytes of the chunk-row sign-extended (parts 0 and 2 the first 8, 1 and 3 the
// last, so the unrolled parts share the load), then the low nibbles (columns 0..15, parts 0 and 1)
// shifted to the top and arithmetically back down, or the high ones (16..31): a sign-extended
// byte shifted arithmetically by 4 is its high nibble as a signed value.
struct Q4Values {
  static constexpr int64_t kChunkBytes = 16;
  using Scale = float;
  static float scale(float s) { return s; }
  static __m256 widen(const uint8_t* p, int part, float s) {
    const __m256i bytes = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * (part % 2))));
    const __m256i values = part < 2 ? _mm256_srai_epi32(_mm256_slli_epi32(bytes, 28), 28) : _mm256_srai_epi32(bytes, 4);
    return _mm256_mul_ps(_mm256_cvtepi32_ps(values), _mm256_set1_ps(s));
  }
};

// AVX2's vectors: 8 floats, 16 half-precision columns a step.
struct Vec {
  using type = __m256;
  static constexpr int64_t kChunk = 16;
  static constexpr int64_t kLanes = 8;
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
#include "kernels/quantized_gemm_tile.inc"

namespace moe::half_gemm_kernels {
namespace {

template <class Weights>
constexpr TileSet kTileSet = {Vec::kChunk, Weights::kInterleaved, kMaxTokens, {0, 4, 4},
                              TileTable<Tiles<Vec, WidenedStep<Vec, Weights>>, kMaxRows, kMinTokens, kMaxTokens>::at};

template <class Values>
constexpr QuantizedTileSet kQuantizedTileSet = {
    kMaxTokens, {0, 4, 4}, TileTable<QuantizedTiles<Vec, Values>, kMaxRows, kMinTokens, kMaxTokens, QuantizedTileFn>::at};

}  // namespace

const TileSet& avx2_tiles(DType dtype) {
  return dtype == DType::BF16 ? kTileSet<Bf16Weights> : kTileSet<F16Weights>;
}

const QuantizedTileSet& avx2_quantized_tiles(DType dtype) {
  return dtype == DType::Q8 ? kQuantizedTileSet<Q8Values> : kQuantizedTileSet<Q4Values>;
}

}  // namespace moe::half_gemm_kernels
