#pragma once
// Half-precision weight matrices rearranged once, at load, into the order the GEMM's register tiles
// read them, so that every tile reads memory front to back as one stream. Read in checkpoint order,
// a tile's rows were side-by-side streams that the hardware prefetcher follows poorly.
//
// The tiled layout: rows in groups of kGroupRows (the last group padded with zero rows), columns
// padded with zeros to a multiple of kChunkCols. Each group is stored chunk by chunk, and each
// chunk holds its kChunkCols columns of the group's first row, then of its second row, and so on:
// a tile of whole groups finds each step's weights in consecutive cache lines (64 bytes a row).
#include <cstdint>
#include <vector>

#include "kernels/weight.h"

namespace moe::weight_tiling {

constexpr int64_t kGroupRows = 4;
constexpr int64_t kChunkCols = 32;

inline int64_t padded_rows(int64_t rows) { return (rows + kGroupRows - 1) / kGroupRows * kGroupRows; }
inline int64_t padded_cols(int64_t cols) { return (cols + kChunkCols - 1) / kChunkCols * kChunkCols; }
// Elements a tiled rows x cols matrix occupies, padding included.
inline int64_t tiled_elements(int64_t rows, int64_t cols) { return padded_rows(rows) * padded_cols(cols); }
// Elements from one row group to the next.
inline int64_t group_stride(int64_t cols) { return kGroupRows * padded_cols(cols); }
// Where column c's chunk starts, counted from the start of its row group's first row.
constexpr int64_t chunk_offset(int64_t c) { return c / kChunkCols * kGroupRows * kChunkCols + c % kChunkCols; }
// Where row r starts: its group's start plus its place within each chunk.
inline int64_t row_offset(int64_t r, int64_t cols) {
  return r / kGroupRows * group_stride(cols) + r % kGroupRows * kChunkCols;
}

// Writes a row-major BF16 or F16 matrix tiled into out[tiled_elements(rows, cols)] and returns the
// view of it. Throws moe::Error for F32 or an already tiled matrix.
WeightView tile_into(const WeightView& row_major, uint16_t* out);

// A tiled copy that owns its storage, for weights that do not come from a checkpoint (tests,
// benchmarks, programs building their own matrices).
struct TiledWeight {
  std::vector<uint16_t> storage;
  WeightView view;
};
TiledWeight tiled_copy(const WeightView& row_major);

}  // namespace moe::weight_tiling
