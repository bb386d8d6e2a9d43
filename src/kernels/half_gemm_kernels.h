#pragma once
// Internal to src/kernels: the half-precision and quantized GEMMs' register-tile kernels of each
// instruction set, the tiling loop (token slabs, row blocks, token groups) that calls them, and the
// tiles' prefetch distance, which linear.cpp's prefetch_leading_rows matches. Each instruction set
// lives in its own file, compiled for it (half_gemm_avx512.cpp under a target pragma), so nothing
// here may be inline code that uses vector registers.
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/weight.h"
#include "kernels/weight_tiling.h"

namespace moe::half_gemm_kernels {

// y[t * out_stride + r] = x[t] · W[r] for the tile's `rows` rows of a tiled weight matrix and its
// token count of packed tokens starting at x (x_stride apart), over the first `cols` columns (the
// packed stride, a whole number of chunks). w is where the tile's first row starts
// (weight_tiling::row_offset), group_stride the distance between row groups. The tile starts on a
// row group, or lies inside one.
using TileFn = void (*)(const uint16_t* w, int64_t group_stride, const float* x, int64_t x_stride, int64_t cols,
                        float* y, int64_t out_stride);

// Rows whose weights stay in L1/L2 while every token group passes over them; a multiple of every
// tile height, so only the last block of a range has a row remainder.
constexpr int64_t kRowBlock = 24;
// How far ahead of a tile's reads its weights are prefetched, in memory order: the hardware
// prefetcher alone leaves the memory bus idle part of the time (measured: tiles 8-11% slower
// without it, even on tiled weights).
constexpr int64_t kPrefetchBytes = 16 * 1024;
// The most tokens any tile has.
constexpr int kMaxTileTokens = 6;

// One instruction set's tiles for one weight dtype, and the activation layout they read.
struct TileSet {
  int64_t chunk;      // weight columns a kernel step widens; the packed stride is a multiple of it
  bool interleaved;   // activations packed as each chunk's even columns, then its odd ones
  int max_tokens;     // tokens per tile at most
  // Tile height for a group of that many tokens: 1, 2, 4 or 8, so that a tile starting on a row
  // group never ends inside a later one.
  int rows_for_tokens[kMaxTileTokens + 1];
  TileFn (*tile)(int rows, int tokens);     // rows ≤ rows_for_tokens[tokens]
};

// The quantized tiles (kernels/quantized_weight.h): as TileFn, w being the tile's first row's
// chunk-rows in bytes and group_stride in bytes; scales the first row's scales (scale_stride apart
// from row to row), one per group_size columns.
using QuantizedTileFn = void (*)(const uint8_t* w, int64_t group_stride, const float* scales, int64_t scale_stride,
                                 int64_t group_size, const float* x, int64_t x_stride, int64_t cols, float* y,
                                 int64_t out_stride);

// One instruction set's quantized tiles for one quantized dtype; activations are packed in column
// order in whole 32-column chunks.
struct QuantizedTileSet {
  int max_tokens;
  int rows_for_tokens[kMaxTileTokens + 1];  // as TileSet's
  QuantizedTileFn (*tile)(int rows, int tokens);
};

// The integer-product quantized tiles (KernelDType::Int8, kernels/int8_activations.h): as
// QuantizedTileFn, but x is int8 activations in column order with one scale per token and
// 32-column block (x_scales, x_stride / 32 of them per token).
using Int8ActivationTileFn = void (*)(const uint8_t* w, int64_t group_stride, const float* scales,
                                      int64_t scale_stride, int64_t group_size, const int8_t* x,
                                      const float* x_scales, int64_t x_stride, int64_t cols, float* y,
                                      int64_t out_stride);

struct Int8ActivationTileSet {
  int max_tokens;
  int rows_for_tokens[kMaxTileTokens + 1];  // as TileSet's
  Int8ActivationTileFn (*tile)(int rows, int tokens);
};

// The vdpbf16ps tiles (KernelDType::BF16 on AVX-512 BF16): as TileFn, but x is bf16 activations in
// column order (whole 32-column chunks).
using Bf16DotTileFn = void (*)(const uint16_t* w, int64_t group_stride, const uint16_t* x, int64_t x_stride,
                               int64_t cols, float* y, int64_t out_stride);

struct Bf16DotTileSet {
  int max_tokens;
  int rows_for_tokens[kMaxTileTokens + 1];  // as TileSet's
  Bf16DotTileFn (*tile)(int rows, int tokens);
};

// Every tile shape of a kernel family, rows 1..MaxRows (so row remainders have their own) by
// tokens MinTokens..MaxTokens, built at compile time from the family's
// `template <int R, int T> static void tile(...)`, which must match Fn.
template <class Family, int MaxRows, int MinTokens, int MaxTokens, class Fn = TileFn>
class TileTable {
 public:
  static Fn at(int rows, int tokens) { return kTable[rows - 1][tokens - MinTokens]; }

 private:
  static constexpr int kTokenCounts = MaxTokens - MinTokens + 1;
  using Row = std::array<Fn, kTokenCounts>;
  template <int R, size_t... TokenIndex>
  static constexpr Row row(std::index_sequence<TokenIndex...>) {
    return {&Family::template tile<R, static_cast<int>(TokenIndex) + MinTokens>...};
  }
  template <size_t... RowsLessOne>
  static constexpr std::array<Row, MaxRows> table(std::index_sequence<RowsLessOne...>) {
    return {row<static_cast<int>(RowsLessOne) + 1>(std::make_index_sequence<kTokenCounts>{})...};
  }
  static constexpr std::array<Row, MaxRows> kTable = table(std::make_index_sequence<MaxRows>{});
};

const TileSet& avx2_tiles(DType dtype);
const TileSet& avx512_tiles(DType dtype);
const QuantizedTileSet& avx2_quantized_tiles(DType dtype);
const QuantizedTileSet& avx512_quantized_tiles(DType dtype);
// AVX2 only: the integer products are no wider in AVX-512 without VNNI, so AVX-512 CPUs run these too.
const Int8ActivationTileSet& avx2_int8_activation_tiles(DType dtype);
const Bf16DotTileSet& avx512_bf16_dot_tiles();

// Tokens whose packed activations stay in L2/L3 while every row block passes over them (a prefill
// of thousands of tokens would otherwise stream them from memory once per row block).
constexpr int64_t kTokenSlab = 192;

// The size of the next token group when `remaining` tokens are left: as few groups as tiles of
// max_tokens allow, of sizes that differ by at most one (so a group of one only for one token).
inline int token_group_size(int64_t remaining, int max_tokens) {
  const int64_t groups = (remaining + max_tokens - 1) / max_tokens;
  return static_cast<int>((remaining + groups - 1) / groups);
}

// Cuts rows [row_begin, row_end) x num_tokens tokens into tiles and calls
// tile(first_row, rows, first_token, tokens) for each. Within a slab of tokens and a block of rows,
// every token group passes over the block while it is in cache. Slabs end on group boundaries, so
// the groups are the same as without slabs. Blocks start on the tiled weights' row groups (except
// where the range starts inside one), and a tile either starts on a row group or ends inside the
// group it starts in.
template <class Tile>
void for_each_tile(int max_tokens, const int (&rows_for_tokens)[kMaxTileTokens + 1], int64_t num_tokens,
                   int64_t row_begin, int64_t row_end, Tile&& tile) {
  for (int64_t slab = 0, slab_end = 0; slab < num_tokens; slab = slab_end) {
    while (slab_end < num_tokens && slab_end - slab < kTokenSlab)
      slab_end += token_group_size(num_tokens - slab_end, max_tokens);
    for (int64_t block = row_begin, block_end = 0; block < row_end; block = block_end) {
      block_end = std::min(row_end, (block / kRowBlock + 1) * kRowBlock);
      for (int64_t first_token = slab, tokens = 0; first_token < slab_end; first_token += tokens) {
        tokens = token_group_size(num_tokens - first_token, max_tokens);
        for (int64_t r = block, rows = 0; r < block_end; r += rows) {
          rows = std::min<int64_t>(rows_for_tokens[tokens], block_end - r);
          if (const int64_t lane = r % weight_tiling::kGroupRows; lane != 0)
            rows = std::min(rows, weight_tiling::kGroupRows - lane);
          tile(r, static_cast<int>(rows), first_token, static_cast<int>(tokens));
        }
      }
    }
  }
}

}  // namespace moe::half_gemm_kernels
