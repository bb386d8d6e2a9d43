#include "kernels/half_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "common/error.h"
#include "kernels/simd.h"

namespace moe {
namespace {

// Weight columns one kernel step consumes: one 256-bit load of 16 half-precision values.
constexpr int64_t kChunk = 16;
// Tile shapes, rows x tokens: a tile keeps rows x tokens accumulators, the rows' widened weights,
// one activation vector and the bf16 mask in the 16 ymm registers of AVX2. Measured on Zen
// (weights in L2, GFLOP/s of one core): 4x2 and 3x3 run at 105-108, near the FMA peak; 4x3
// spills (60) and 2x4 .. 2x6 run at 93-100, so tokens are taken two or three at a time. A single
// token is a GEMV and has its own loop (gemv_rows).
constexpr int kMaxTileRows = 4;
constexpr int kMinTileTokens = 2;
constexpr int kMaxTileTokens = 3;
constexpr int kTileTokenCounts = kMaxTileTokens - kMinTileTokens + 1;
// Rows per tile for a group of t tokens (index t - kMinTileTokens).
constexpr std::array<int, kTileTokenCounts> kRowsForTokens = {4, 3};
// Rows whose weights stay in L1/L2 while every token group passes over them (a multiple of every
// entry of kRowsForTokens, so only the last block has a row remainder).
constexpr int64_t kRowBlock = 24;
// How far ahead of a tile's reads its weights are prefetched. A tile reads R rows side by side, R
// interleaved streams that the hardware prefetcher loses track of (a 4-row tile read bf16 from
// memory at half the speed of a one-row GEMV); prefetching the bytes that follow in memory order
// restores the speed.
constexpr int64_t kPrefetchBytes = 16 * 1024;
// Tokens whose packed activations stay in L2/L3 while every row block passes over them (a prefill
// of thousands of tokens would otherwise stream them from memory once per row block).
constexpr int64_t kTokenSlab = 192;

// bf16 widened without a shuffle: the 32-bit lane i of a 16-value load holds value 2i in its low
// half and value 2i + 1 in its high half; shifting left by 16 makes value 2i a float32, and
// masking off the low half makes value 2i + 1 one. The activations are packed in that order.
struct Bf16Weights {
  static __m256 first_half(const uint16_t* p) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
  }
  static __m256 second_half(const uint16_t* p) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  // Activations in that order: a chunk's even columns, then its odd ones.
  static void pack_chunk(const float* x, float* out) {
    const __m256 low = _mm256_loadu_ps(x), high = _mm256_loadu_ps(x + 8);
    // Each shuffle picks within 128-bit lanes ([0 2 8 10 | 4 6 12 14]); the permute puts the quarters in order.
    const __m256 even = _mm256_shuffle_ps(low, high, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 odd = _mm256_shuffle_ps(low, high, _MM_SHUFFLE(3, 1, 3, 1));
    constexpr int kQuartersInOrder = _MM_SHUFFLE(3, 1, 2, 0);
    _mm256_storeu_ps(out, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), kQuartersInOrder)));
    _mm256_storeu_ps(out + 8, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), kQuartersInOrder)));
  }
};

// f16 widened in column order by F16C.
struct F16Weights {
  static __m256 first_half(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static __m256 second_half(const uint16_t* p) { return first_half(p + 8); }
  static void pack_chunk(const float* x, float* out) { std::copy(x, x + kChunk, out); }
};

// One step over a chunk of 16 columns: acc[r][t] += W[r] ⊙ x[t] lane by lane, for R weight rows
// w_stride apart and T packed tokens x_stride apart. Each widened weight vector feeds T FMAs.
template <class Weights, int R, int T>
inline void tile_step(const uint16_t* w, int64_t w_stride, const float* x, int64_t x_stride, __m256 (&acc)[R][T]) {
  __m256 wv[R];
  for (int r = 0; r < R; ++r) wv[r] = Weights::first_half(w + r * w_stride);
  for (int t = 0; t < T; ++t) {
    const __m256 xv = _mm256_loadu_ps(x + t * x_stride);
    for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
  }
  for (int r = 0; r < R; ++r) wv[r] = Weights::second_half(w + r * w_stride);
  for (int t = 0; t < T; ++t) {
    const __m256 xv = _mm256_loadu_ps(x + t * x_stride + 8);
    for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
  }
}

// The lane sums of four vectors at once, [Σa, Σb, Σc, Σd], in three horizontal adds.
inline __m128 lane_sums(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 sums = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(sums), _mm256_extractf128_ps(sums, 1));
}

// y[t * out_stride + r] = the lane sum of acc[r][t]; four rows are adjacent in y, so they are
// reduced and stored together.
template <int R, int T>
inline void store_sums(const __m256 (&acc)[R][T], float* y, int64_t out_stride) {
  for (int t = 0; t < T; ++t) {
    if constexpr (R == 4) {
      _mm_storeu_ps(y + t * out_stride, lane_sums(acc[0][t], acc[1][t], acc[2][t], acc[3][t]));
    } else {
      for (int r = 0; r < R; ++r) y[t * out_stride + r] = simd::horizontal_sum(acc[r][t]);
    }
  }
}

// The columns of a row past its last whole chunk, zero-padded to a chunk: the kernels read the
// remainder from this copy, because reading on would reach the next row or past the mapping, and
// a zero activation times an Inf weight would be NaN.
inline void copy_tail(const uint16_t* row, int64_t cols, uint16_t (&tail)[kChunk]) {
  std::fill(std::begin(tail), std::end(tail), uint16_t{0});
  std::copy(row + cols / kChunk * kChunk, row + cols, tail);
}

// y for R rows starting at w (cols apart) and T packed tokens: the whole chunks straight from the
// weights, then the column remainder from copy_tail.
template <class Weights, int R, int T>
void tile(const uint16_t* w, int64_t cols, const float* x, int64_t x_stride, float* y, int64_t out_stride) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const int64_t whole = cols / kChunk * kChunk;
  // The tile's rows are adjacent in memory; by column c it has read 2 R c of their bytes. Prefetches
  // never fault, so running past the last row is harmless (hence the integer address).
  const uintptr_t prefetch_base = reinterpret_cast<uintptr_t>(w) + kPrefetchBytes;
  for (int64_t c = 0; c < whole; c += kChunk) {
    for (int line = 0; line < (R + 1) / 2; ++line)
      _mm_prefetch(reinterpret_cast<const char*>(prefetch_base + 2 * R * c + 64 * line), _MM_HINT_T0);
    tile_step<Weights, R, T>(w + c, cols, x + c, x_stride, acc);
  }
  if (whole < cols) {
    uint16_t tail[R][kChunk];
    for (int r = 0; r < R; ++r) copy_tail(w + r * cols, cols, tail[r]);
    tile_step<Weights, R, T>(tail[0], kChunk, x + whole, x_stride, acc);
  }
  store_sums(acc, y, out_stride);
}

using TileFn = void (*)(const uint16_t*, int64_t, const float*, int64_t, float*, int64_t);
using TileRow = std::array<TileFn, kTileTokenCounts>;

template <class Weights, int R, size_t... TokenIndex>
constexpr TileRow tiles_of_rows(std::index_sequence<TokenIndex...>) {
  return {tile<Weights, R, static_cast<int>(TokenIndex) + kMinTileTokens>...};
}

template <class Weights, size_t... RowsLessOne>
constexpr std::array<TileRow, kMaxTileRows> make_tile_table(std::index_sequence<RowsLessOne...>) {
  return {tiles_of_rows<Weights, static_cast<int>(RowsLessOne) + 1>(std::make_index_sequence<kTileTokenCounts>{})...};
}

// kTiles<Weights>[R - 1][T - kMinTileTokens]: every tile shape, so row remainders have their own.
template <class Weights>
constexpr std::array<TileRow, kMaxTileRows> kTiles = make_tile_table<Weights>(std::make_index_sequence<kMaxTileRows>{});

// One token against rows [row_begin, row_end), a row at a time: a single stream in memory order,
// which the hardware prefetcher follows best (it loses track of a tile's side-by-side rows). Its
// loads are 8 values wide: checkpoint tensors sit 16 bytes off a cache line, where half of the
// tiles' 16-value loads straddle two lines, and a GEMV in L2 ran 20% slower with them. The single
// token is packed in column order for this.
template <DType kDType>
void gemv_rows(const PackedActivations& x, const uint16_t* weights, int64_t row_begin, int64_t row_end, float* y) {
  constexpr int kChains = 4;  // independent FMA chains, enough to hide the FMA latency
  const int64_t cols = x.cols, whole = cols / kChunk * kChunk;
  const float* xs = x.values.data();
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint16_t* w = weights + r * cols;
    __m256 acc[kChains];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 * kChains <= whole; c += 8 * kChains)
      for (int k = 0; k < kChains; ++k)
        acc[k] = _mm256_fmadd_ps(simd::load8_widened(w + c + 8 * k, kDType), _mm256_loadu_ps(xs + c + 8 * k), acc[k]);
    for (; c < whole; c += 8)
      acc[0] = _mm256_fmadd_ps(simd::load8_widened(w + c, kDType), _mm256_loadu_ps(xs + c), acc[0]);
    if (whole < cols) {
      uint16_t tail[kChunk];
      copy_tail(w, cols, tail);
      for (int k = 0; k < 2; ++k)
        acc[k] = _mm256_fmadd_ps(simd::load8_widened(tail + 8 * k, kDType), _mm256_loadu_ps(xs + whole + 8 * k), acc[k]);
    }
    for (int k = 1; k < kChains; ++k) acc[0] = _mm256_add_ps(acc[0], acc[k]);
    y[r - row_begin] = simd::horizontal_sum(acc[0]);
  }
}

// The size of the next token group when `remaining` (at least 2) tokens are left: threes, and
// twos for a remainder (four left make 2 + 2, not 3 + 1).
int token_group_size(int64_t remaining) {
  return remaining == 4 || remaining == 2 ? 2 : static_cast<int>(std::min<int64_t>(remaining, kMaxTileTokens));
}

// Within a slab of tokens and a block of rows, every token group passes over the block while it
// is in cache. Slabs end on group boundaries, so the groups are the same as without slabs.
template <class Weights>
void gemm_rows(const PackedActivations& x, const uint16_t* weights, int64_t row_begin, int64_t row_end, float* y,
               int64_t out_stride) {
  const int64_t num_tokens = x.num_tokens;
  for (int64_t slab = 0, slab_end = 0; slab < num_tokens; slab = slab_end) {
    while (slab_end < num_tokens && slab_end - slab < kTokenSlab) slab_end += token_group_size(num_tokens - slab_end);
    for (int64_t block = row_begin; block < row_end; block += kRowBlock) {
      const int64_t block_end = std::min(block + kRowBlock, row_end);
      for (int64_t first_token = slab, tokens = 0; first_token < slab_end; first_token += tokens) {
        tokens = token_group_size(num_tokens - first_token);
        const int rows = kRowsForTokens[tokens - kMinTileTokens];
        const float* x_group = x.values.data() + first_token * x.stride;
        float* y_group = y + first_token * out_stride;
        for (int64_t r = block; r < block_end; r += rows) {
          const TileFn tile_fn = kTiles<Weights>[std::min<int64_t>(rows, block_end - r) - 1][tokens - kMinTileTokens];
          tile_fn(weights + r * x.cols, x.cols, x_group, x.stride, y_group + (r - row_begin), out_stride);
        }
      }
    }
  }
}

// Copies x into out's layout: each chunk of 16 columns in the order Weights widens it, zeros past cols.
template <class Weights>
void pack(const float* x, const PackedActivations& layout, float* out) {
  const int64_t cols = layout.cols, whole = cols / kChunk * kChunk;
  for (int64_t t = 0; t < layout.num_tokens; ++t) {
    const float* x_row = x + t * cols;
    float* out_row = out + t * layout.stride;
    for (int64_t c = 0; c < whole; c += kChunk) Weights::pack_chunk(x_row + c, out_row + c);
    if (whole < cols) {
      float tail[kChunk] = {};
      std::copy(x_row + whole, x_row + cols, tail);
      Weights::pack_chunk(tail, out_row + whole);
    }
  }
}

}  // namespace

void pack_activations(const float* x, int64_t num_tokens, int64_t cols, DType dtype, PackedActivations& out) {
  if (dtype == DType::F32) throw Error("pack_activations: the half-precision GEMM takes BF16 or F16 weights, not F32");
  out.num_tokens = num_tokens;
  out.cols = cols;
  out.stride = (cols + kChunk - 1) / kChunk * kChunk;
  out.dtype = dtype;
  out.values.resize(static_cast<size_t>(num_tokens * out.stride));
  // Column order (F16Weights' order) for f16, and for the single token gemv_rows reads.
  if (dtype == DType::BF16 && num_tokens > 1)
    pack<Bf16Weights>(x, out, out.values.data());
  else
    pack<F16Weights>(x, out, out.values.data());
}

void half_gemm_rows(const PackedActivations& x, const WeightView& weight, int64_t row_begin, int64_t row_end,
                    float* y, int64_t out_stride) {
  if (weight.dtype != x.dtype || weight.cols != x.cols)
    throw Error(std::string("half_gemm_rows: activations packed for ") + dtype_name(x.dtype) + " weights of " +
                std::to_string(x.cols) + " columns, given " + dtype_name(weight.dtype) + " weights of " +
                std::to_string(weight.cols));
  if (x.num_tokens == 0) return;
  const uint16_t* weights = static_cast<const uint16_t*>(weight.data);
  if (x.num_tokens == 1 && weight.dtype == DType::BF16)
    gemv_rows<DType::BF16>(x, weights, row_begin, row_end, y);
  else if (x.num_tokens == 1)
    gemv_rows<DType::F16>(x, weights, row_begin, row_end, y);
  else if (weight.dtype == DType::BF16)
    gemm_rows<Bf16Weights>(x, weights, row_begin, row_end, y, out_stride);
  else
    gemm_rows<F16Weights>(x, weights, row_begin, row_end, y, out_stride);
}

}  // namespace moe
