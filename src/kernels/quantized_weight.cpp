#include "kernels/quantized_weight.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "kernels/thread_pool.h"
#include "kernels/weight_tiling.h"

namespace moe::quantized {
namespace {

constexpr int64_t kGroupRows = weight_tiling::kGroupRows;

int64_t chunks(int64_t cols) { return (cols + kChunkCols - 1) / kChunkCols; }

// Byte offset of column c's byte within its row's chunk-rows (the nibble choice is the caller's).
int64_t column_offset_bytes(DType dtype, int64_t c) {
  const int64_t in_chunk = c % kChunkCols;
  return c / kChunkCols * kGroupRows * chunk_bytes(dtype) + (dtype == DType::Q4 ? in_chunk % 16 : in_chunk);
}

}  // namespace

bool is_quantized(DType dtype) { return dtype == DType::Q8 || dtype == DType::Q4; }

int bits_of(DType dtype) { return dtype == DType::Q4 ? 4 : 8; }

int64_t chunk_bytes(DType dtype) { return kChunkCols * bits_of(dtype) / 8; }

int64_t group_stride_bytes(DType dtype, int64_t cols) { return kGroupRows * chunks(cols) * chunk_bytes(dtype); }

int64_t tiled_bytes(DType dtype, int64_t rows, int64_t cols) {
  return weight_tiling::padded_rows(rows) / kGroupRows * group_stride_bytes(dtype, cols);
}

int64_t row_offset_bytes(DType dtype, int64_t r, int64_t cols) {
  return r / kGroupRows * group_stride_bytes(dtype, cols) + r % kGroupRows * chunk_bytes(dtype);
}

int64_t num_groups(int64_t cols, int64_t group_size) { return (cols + group_size - 1) / group_size; }

int stored_value(const WeightView& view, int64_t r, int64_t c) {
  const auto* bytes = static_cast<const uint8_t*>(view.data);
  const uint8_t byte = bytes[row_offset_bytes(view.dtype, r, view.cols) + column_offset_bytes(view.dtype, c)];
  if (view.dtype == DType::Q8) return static_cast<int8_t>(byte);
  const int nibble = c % kChunkCols < 16 ? byte & 0xF : byte >> 4;
  return nibble >= 8 ? nibble - 16 : nibble;
}

int64_t storage_group_size(int64_t group_size, int64_t cols, const std::string& what) {
  if (group_size <= 0 || group_size >= cols) return chunks(cols) * kChunkCols;
  if (group_size % kChunkCols != 0)
    throw Error(what + ": group size " + std::to_string(group_size) + " is not supported (a multiple of " +
                std::to_string(kChunkCols) + ", or one group over all " + std::to_string(cols) + " columns)");
  return group_size;
}

WeightView tile_into(DType dtype, const int8_t* values, int64_t rows, int64_t cols, const float* scales,
                     int64_t group_size, uint8_t* out) {
  if (!is_quantized(dtype)) throw Error(std::string("quantized::tile_into: ") + dtype_name(dtype) + " is not quantized");
  const int64_t stride = group_stride_bytes(dtype, cols);
  const int64_t padded_groups = weight_tiling::padded_rows(rows) / kGroupRows;
  // As weight_tiling::tile_into: first writes to fresh memory are spread over the kernel threads.
  parallel_for(padded_groups, 32, [&](int64_t group_begin, int64_t group_end) {
    std::memset(out + group_begin * stride, 0, static_cast<size_t>((group_end - group_begin) * stride));
    for (int64_t r = group_begin * kGroupRows; r < std::min(rows, group_end * kGroupRows); ++r) {
      uint8_t* row = out + row_offset_bytes(dtype, r, cols);
      const int8_t* in = values + r * cols;
      for (int64_t c = 0; c < cols; ++c) {
        uint8_t& byte = row[column_offset_bytes(dtype, c)];
        if (dtype == DType::Q8)
          byte = static_cast<uint8_t>(in[c]);
        else
          byte |= static_cast<uint8_t>((in[c] & 0xF) << (c % kChunkCols < 16 ? 0 : 4));
      }
    }
  });
  WeightView view{out, dtype, rows, cols, WeightLayout::Tiled};
  view.scales = scales;
  view.group_size = group_size;
  return view;
}

void quantize_symmetric(const WeightView& row_major, DType dtype, int64_t group_size, int8_t* values, float* scales) {
  const int64_t rows = row_major.rows, cols = row_major.cols, groups = num_groups(cols, group_size);
  const int limit = dtype == DType::Q8 ? 127 : 7;
  const int lowest = dtype == DType::Q8 ? -128 : -8;
  parallel_for(rows, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = begin; r < end; ++r) {
      row_major.row_to_float(r, row.data());
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t first = g * group_size, last = std::min(cols, first + group_size);
        float largest = 0.0f;
        for (int64_t c = first; c < last; ++c) largest = std::max(largest, std::abs(row[c]));
        const float scale = largest / static_cast<float>(limit);
        scales[r * groups + g] = scale;
        for (int64_t c = first; c < last; ++c) {
          const float q = scale == 0.0f ? 0.0f : std::nearbyint(row[c] / scale);
          values[r * cols + c] = static_cast<int8_t>(std::clamp(static_cast<int>(q), lowest, limit));
        }
      }
    }
  });
}

QuantizedMatrix quantized_copy(DType dtype, const std::vector<int8_t>& values, int64_t rows, int64_t cols,
                               std::vector<float> scales, int64_t group_size) {
  QuantizedMatrix copy;
  copy.storage.resize(static_cast<size_t>(tiled_bytes(dtype, rows, cols)));
  copy.scales = std::move(scales);
  copy.view = tile_into(dtype, values.data(), rows, cols, copy.scales.data(), group_size, copy.storage.data());
  return copy;
}

}  // namespace moe::quantized
