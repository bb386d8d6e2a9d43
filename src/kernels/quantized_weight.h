#pragma once
// Quantized weight matrices (DType::Q8, DType::Q4): signed integers with one float32 scale per row
// and group of `group_size` input columns, the matrix element being value × scale. The values are
// tiled like half-precision weights (kernels/weight_tiling.h: row groups of 4, chunks of 32
// columns, each chunk holding its columns of the group's first row, then of its second, ...), a
// chunk-row being 32 bytes of int8 or 16 bytes of int4. In an int4 chunk-row, byte j holds column
// j in its low nibble and column j + 16 in its high one, so both halves widen in column order.
// Scales are row-major [rows, num_groups]. A group size is a multiple of the 32-column chunk (a
// per-row scale, over every column, is stored as padded_cols(cols)), so no chunk straddles two.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/weight.h"

namespace moe::quantized {

constexpr int64_t kChunkCols = 32;

bool is_quantized(DType dtype);
int bits_of(DType dtype);  // 8 or 4
// Bytes of one row's values in one chunk: 32 (Q8) or 16 (Q4).
int64_t chunk_bytes(DType dtype);
// Bytes a tiled rows x cols matrix of `dtype` occupies, padding included.
int64_t tiled_bytes(DType dtype, int64_t rows, int64_t cols);
// Bytes from one row group to the next.
int64_t group_stride_bytes(DType dtype, int64_t cols);
// Where row r's first chunk-row starts, in bytes from the matrix's start.
int64_t row_offset_bytes(DType dtype, int64_t r, int64_t cols);
int64_t num_groups(int64_t cols, int64_t group_size);

// The stored integer of element (r, c) of a tiled quantized view.
int stored_value(const WeightView& view, int64_t r, int64_t c);

// The group size a view stores for a request of `group_size` columns per scale (0 or anything at
// least cols: one scale per row). Throws moe::Error, naming `what`, for a size that is not a
// multiple of 32.
int64_t storage_group_size(int64_t group_size, int64_t cols, const std::string& what);

// Writes row-major int8 `values` (in [-128, 127] for Q8, [-8, 7] for Q4) tiled into
// out[tiled_bytes(...)] and returns the view over it and `scales` ([rows, num_groups], kept by the
// caller). group_size as stored (storage_group_size).
WeightView tile_into(DType dtype, const int8_t* values, int64_t rows, int64_t cols, const float* scales,
                     int64_t group_size, uint8_t* out);

// Symmetric quantization of a row-major float32/bf16/f16 matrix at load: per group of a row the
// scale is max|w| / 127 (Q8) or max|w| / 7 (Q4), and each value round(w / scale), clamped to the
// type's range. Writes values row-major into values[rows * cols] and scales [rows, num_groups].
void quantize_symmetric(const WeightView& row_major, DType dtype, int64_t group_size, int8_t* values, float* scales);

// A quantized copy that owns its storage (tests, benchmarks).
struct QuantizedMatrix {
  std::vector<uint8_t> storage;
  std::vector<float> scales;
  WeightView view;
};
QuantizedMatrix quantized_copy(DType dtype, const std::vector<int8_t>& values, int64_t rows, int64_t cols,
                               std::vector<float> scales, int64_t group_size);

}  // namespace moe::quantized
