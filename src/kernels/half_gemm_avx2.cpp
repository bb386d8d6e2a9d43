// The half-precision GEMM's AVX2 kernels (x86-64-v3, the build's baseline): register tiles of 16
// columns a step.
#include <immintrin.h>

#include "kernels/half_gemm_kernels.h"
#include "kernels/quantized_weight.h"

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

// Integer products (KernelDType::Int8): a Weights policy loads a chunk-row's 32 weights as bytes in
// column order and takes their exact int32 products with 32 int8 activations, as 8 lanes of 4
// products each (dot), less an activation term computed once per token and chunk.
//
// Q8: the bytes are signed. vpmaddubsw multiplies unsigned by signed bytes, so |w| (at most 128: an
// unsigned byte) meets x carrying w's sign (|x| <= 127); a pair sums to at most 2 · 128 · 127 < 2^15,
// so nothing saturates.
struct Q8Bytes {
  static constexpr int64_t kChunkBytes = 32;
  static __m256i load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static __m256i activation_term(__m256i) { return _mm256_setzero_si256(); }
  static __m256i dot(__m256i w, __m256i x, __m256i) {
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  }
};

// Q4: a chunk-row's 16 bytes in both halves of a vector, the upper half shifted down by 4 (its high
// nibbles are columns 16..31), each nibble n taken as the unsigned n xor 8 = n + 8 (0..15), which
// vpmaddubsw multiplies directly; the products carry 8 Σx too much, taken off as the activation
// term (8 times the lane's sum of its four activations). The result is exactly the signed one.
struct Q4Bytes {
  static constexpr int64_t kChunkBytes = 16;
  static __m256i load(const uint8_t* p) {
    const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i nibbles = _mm256_srlv_epi32(both, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(_mm256_xor_si256(nibbles, _mm256_set1_epi8(8)), _mm256_set1_epi8(0x0F));
  }
  static __m256i activation_term(__m256i x) {
    const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), x), _mm256_set1_epi16(1));
    return _mm256_slli_epi32(sums, 3);
  }
  static __m256i dot(__m256i offset_weights, __m256i x, __m256i activation_term) {
    const __m256i pairs = _mm256_maddubs_epi16(offset_weights, x);
    return _mm256_sub_epi32(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)), activation_term);
  }
};

// The integer-product tile: per group of weight columns, the exact int32 sums of each 32-column
// block scaled by the block's activation scale, summed in float32, and each group's sum scaled by
// the row's group scale. Heights 4 for one token and 2 for two keep both sets of sums in registers.
template <class Weights>
struct Int8ActivationTiles {
  template <int R, int T>
  static void tile(const uint8_t* w, int64_t group_stride, const float* scales, int64_t scale_stride,
                   int64_t group_size, const int8_t* x, const float* x_scales, int64_t x_stride, int64_t cols,
                   float* y, int64_t out_stride) {
    constexpr int64_t kChunk = quantized::kChunkCols, kChunkBytes = Weights::kChunkBytes;
    constexpr int kLinesPerStep = static_cast<int>((R * kChunkBytes + 63) / 64);
    const int64_t x_blocks = x_stride / kChunk;
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    int64_t row_offset[R];
    for (int r = 0; r < R; ++r)
      row_offset[r] = r / weight_tiling::kGroupRows * group_stride + r % weight_tiling::kGroupRows * kChunkBytes;
    const uintptr_t prefetch_base = reinterpret_cast<uintptr_t>(w) + kPrefetchBytes;
    for (int64_t first = 0, group = 0; first < cols; first += group_size, ++group) {
      __m256 sums[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) sums[r][t] = _mm256_setzero_ps();
      for (int64_t c = first, last = std::min(cols, first + group_size); c < last; c += kChunk) {
        const int64_t chunk = c / kChunk;
        for (int line = 0; line < kLinesPerStep; ++line)
          _mm_prefetch(reinterpret_cast<const char*>(prefetch_base + R * kChunkBytes * chunk + 64 * line), _MM_HINT_T0);
        const uint8_t* chunk_start = w + chunk * weight_tiling::kGroupRows * kChunkBytes;
        __m256i wv[R];
        for (int r = 0; r < R; ++r) wv[r] = Weights::load(chunk_start + row_offset[r]);
        for (int t = 0; t < T; ++t) {
          const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + t * x_stride + c));
          const __m256 x_scale = _mm256_broadcast_ss(x_scales + t * x_blocks + chunk);
          const __m256i term = Weights::activation_term(xv);
          for (int r = 0; r < R; ++r)
            sums[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Weights::dot(wv[r], xv, term)), x_scale, sums[r][t]);
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m256 scale = _mm256_set1_ps(scales[r * scale_stride + group]);
        for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(sums[r][t], scale, acc[r][t]);
      }
    }
    store_sums<Vec>(acc, y, out_stride);
  }
};

template <class Weights>
constexpr Int8ActivationTileSet kInt8ActivationTileSet = {
    2, {0, 4, 2}, TileTable<Int8ActivationTiles<Weights>, 4, 1, 2, Int8ActivationTileFn>::at};

}  // namespace

const TileSet& avx2_tiles(DType dtype) {
  return dtype == DType::BF16 ? kTileSet<Bf16Weights> : kTileSet<F16Weights>;
}

const QuantizedTileSet& avx2_quantized_tiles(DType dtype) {
  return dtype == DType::Q8 ? kQuantizedTileSet<Q8Values> : kQuantizedTileSet<Q4Values>;
}

const Int8ActivationTileSet& avx2_int8_activation_tiles(DType dtype) {
  return dtype == DType::Q8 ? kInt8ActivationTileSet<Q8Bytes> : kInt8ActivationTileSet<Q4Bytes>;
}

}  // namespace moe::half_gemm_kernels
