#pragma once
// Internal to src/kernels: the half-precision GEMM's register-tile kernels of each instruction
// set, which half_gemm.cpp's tiling loop (token slabs, row blocks, token groups) calls, and the
// tiles' prefetch distance, which linear.cpp's prefetch_leading_rows matches. Each instruction set
// lives in its own file, compiled for it (half_gemm_avx512.cpp under a target pragma), so nothing
// here may be inline code that uses vector registers.
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

// Every tile shape of a kernel family, rows 1..MaxRows (so row remainders have their own) by
// tokens MinTokens..MaxTokens, built at compile time from the family's
// `template <int R, int T> static void tile(...)`, which must match TileFn.
template <class Family, int MaxRows, int MinTokens, int MaxTokens>
class TileTable {
 public:
  static TileFn at(int rows, int tokens) { return kTable[rows - 1][tokens - MinTokens]; }

 private:
  static constexpr int kTokenCounts = MaxTokens - MinTokens + 1;
  using Row = std::array<TileFn, kTokenCounts>;
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

}  // namespace moe::half_gemm_kernels
