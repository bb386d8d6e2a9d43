#include "kernels/weight_tiling.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"
#include "kernels/thread_pool.h"

namespace moe::weight_tiling {
namespace {

// Row groups a thread tiles at a time: 256 KiB of a 1024-column matrix.
constexpr int64_t kMinGroupsPerChunk = 32;

}  // namespace

WeightView tile_into(const WeightView& row_major, uint16_t* out) {
  if (row_major.dtype == DType::F32) throw Error("tile_into: only half-precision weights are tiled, not F32");
  if (row_major.layout != WeightLayout::RowMajor) throw Error("tile_into: the matrix is tiled already");
  const int64_t rows = row_major.rows, cols = row_major.cols, stride = group_stride(cols);
  const uint16_t* in = static_cast<const uint16_t*>(row_major.data);
  // Spread over the kernel threads: a load writes every weight byte here once, and first writes to
  // fresh memory cost the kernel a page clear each (most of the time of tiling a checkpoint).
  parallel_for(padded_rows(rows) / kGroupRows, kMinGroupsPerChunk, [&](int64_t group_begin, int64_t group_end) {
    std::fill(out + group_begin * stride, out + group_end * stride, uint16_t{0});
    for (int64_t r = group_begin * kGroupRows; r < std::min(rows, group_end * kGroupRows); ++r) {
      uint16_t* row = out + row_offset(r, cols);
      for (int64_t c = 0; c < cols; c += kChunkCols)
        std::memcpy(row + chunk_offset(c), in + r * cols + c, sizeof(uint16_t) * std::min(kChunkCols, cols - c));
    }
  });
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
