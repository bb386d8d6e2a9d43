#include "kernels/weight_tiling.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"

namespace moe::weight_tiling {

WeightView tile_into(const WeightView& row_major, uint16_t* out) {
  if (row_major.dtype == DType::F32) throw Error("tile_into: only half-precision weights are tiled, not F32");
  if (row_major.layout != WeightLayout::RowMajor) throw Error("tile_into: the matrix is tiled already");
  const int64_t rows = row_major.rows, cols = row_major.cols;
  std::fill_n(out, tiled_elements(rows, cols), uint16_t{0});
  const uint16_t* in = static_cast<const uint16_t*>(row_major.data);
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* row = out + row_offset(r, cols);
    for (int64_t c = 0; c < cols; c += kChunkCols)
      std::memcpy(row + chunk_offset(c), in + r * cols + c, sizeof(uint16_t) * std::min(kChunkCols, cols - c));
  }
  WeightView tiled = row_major;
  tiled.data = out;
  tiled.layout = WeightLayout::Tiled;
  return tiled;
}

TiledWeight tiled_copy(const WeightView& row_major) {
  TiledWeight copy;
  copy.storage.resize(static_cast<size_t>(tiled_elements(row_major.rows, row_major.cols)));
  copy.view = tile_into(row_major, copy.storage.data());
  return copy;
}

}  // namespace moe::weight_tiling
