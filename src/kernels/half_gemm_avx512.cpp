// The half-precision GEMM's AVX-512 kernels: register tiles of 32 columns a step in zmm registers,
// which double the FMA width of AVX2 on CPUs with full 512-bit units (Zen 5, Intel server cores).
// The build's baseline is x86-64-v3, so only the functions below the target pragma use AVX-512;
// half_gemm.cpp calls them only where the CPU has it. Every header is included before the pragma,
// so the inline and template code they define keeps the baseline target; half_gemm_tile.inc, the
// tile itself, is included after it on purpose.

// GCC 12 warns that the AVX-512 intrinsics' own "undefined" pass-through operands are
// uninitialised (GCC bug 105593, fixed in 13). The warning points into the header, so it is
// silenced before the header, for this file only.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/half_gemm_kernels.h"
#include "kernels/quantized_weight.h"

// Clang ignores GCC's target pragma; its own attribute pragma does the same for every function
// defined up to the pop at the end of the file.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#endif

#include "kernels/half_gemm_avx512_vec.inc"

namespace moe::half_gemm_kernels {
namespace {

// bf16 widened without a shuffle, as in the AVX2 kernels: lane i of a 32-value load holds values
// 2i (low half) and 2i + 1 (high half); a shift makes the first a float32, a mask the second.
struct Bf16Weights {
  static constexpr bool kInterleaved = true;
  static __m512 first_half(const uint16_t* p) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(p), 16)); }
  static __m512 second_half(const uint16_t* p) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
};

// f16 widened in column order, 16 values a conversion.
struct F16Weights {
  static constexpr bool kInterleaved = false;
  static __m512 first_half(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 second_half(const uint16_t* p) { return first_half(p + 16); }
};

// int8 values sign-extended, 16 a conversion, times the scale.
struct Q8Values {
  static constexpr int64_t kChunkBytes = 32;
  using Scale = float;
  static float scale(float s) { return s; }
  static __m512 widen(const uint8_t* p, int part, float s) {
    const __m512 values = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * part))));
    return _mm512_mul_ps(values, _mm512_set1_ps(s));
  }
};

// int4 values looked up: each row and group gets the 16 products nibble-value × scale in one
// register, and a permute picks them by nibble (it reads only each lane's low 4 bits), so the low
// nibbles (columns 0..15) need no mask and the high ones (16..31) one shift. Three shuffles and a
// shift for 32 values, against two conversions, four shifts and two multiplications.
struct Q4Values {
  static constexpr int64_t kChunkBytes = 16;
  using Scale = __m512;
  static __m512 scale(float s) {
    const __m512 nibble_values = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1);
    return _mm512_mul_ps(nibble_values, _mm512_set1_ps(s));
  }
  static __m512 widen(const uint8_t* p, int part, __m512 table) {
    const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm512_permutexvar_ps(part == 0 ? bytes : _mm512_srli_epi32(bytes, 4), table);
  }
};

}  // namespace
}  // namespace moe::half_gemm_kernels

#include "kernels/half_gemm_tile.inc"
#include "kernels/quantized_gemm_tile.inc"

namespace moe::half_gemm_kernels {
namespace {

template <class Weights>
constexpr TileSet kTileSet = {Vec::kChunk, Weights::kInterleaved, kMaxTokens, {0, 8, 8, 4, 4, 4, 4},
                              TileTable<Tiles<Vec, WidenedStep<Vec, Weights>>, kMaxRows, kMinTokens, kMaxTokens>::at};

template <class Values>
constexpr QuantizedTileSet kQuantizedTileSet = {
    kMaxTokens, {0, 8, 8, 4, 4, 4, 4},
    TileTable<QuantizedTiles<Vec, Values>, kMaxRows, kMinTokens, kMaxTokens, QuantizedTileFn>::at};

}  // namespace

const TileSet& avx512_tiles(DType dtype) {
  return dtype == DType::BF16 ? kTileSet<Bf16Weights> : kTileSet<F16Weights>;
}

const QuantizedTileSet& avx512_quantized_tiles(DType dtype) {
  return dtype == DType::Q8 ? kQuantizedTileSet<Q8Values> : kQuantizedTileSet<Q4Values>;
}

}  // namespace moe::half_gemm_kernels

#if defined(__clang__)
#pragma clang attribute pop
#endif
