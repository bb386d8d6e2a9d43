#include "kernels/quantized_gemm.h"

#include <string>

#include "common/error.h"
#include "kernels/half_gemm_kernels.h"
#include "kernels/quantized_weight.h"

namespace moe {

void quantized_gemm_rows(const PackedActivations& x, const WeightView& weight, int64_t row_begin, int64_t row_end,
                         float* y, int64_t out_stride) {
  if (!quantized::is_quantized(weight.dtype) || weight.dtype != x.dtype || weight.cols != x.cols)
    throw Error(std::string("quantized_gemm_rows: activations packed for ") + dtype_name(x.dtype) + " weights of " +
                std::to_string(x.cols) + " columns, given " + dtype_name(weight.dtype) + " weights of " +
                std::to_string(weight.cols));
  if (weight.layout != WeightLayout::Tiled || !weight.scales || weight.group_size % quantized::kChunkCols != 0)
    throw Error("quantized_gemm_rows: the weights must be tiled with scales (quantized::tile_into)");
  if (x.num_tokens == 0) return;
  const auto* values = static_cast<const uint8_t*>(weight.data);
  const int64_t group_stride = quantized::group_stride_bytes(weight.dtype, weight.cols);
  const int64_t scale_stride = quantized::num_groups(weight.cols, weight.group_size);
  if (x.kernel_dtype == KernelDType::Int8) {
    const half_gemm_kernels::Int8ActivationTileSet& tiles = half_gemm_kernels::avx2_int8_activation_tiles(weight.dtype);
    const int64_t x_blocks = x.stride / quantized::kChunkCols;
    half_gemm_kernels::for_each_tile(
        tiles.max_tokens, tiles.rows_for_tokens, x.num_tokens, row_begin, row_end,
        [&](int64_t r, int rows, int64_t first_token, int tokens) {
          tiles.tile(rows, tokens)(values + quantized::row_offset_bytes(weight.dtype, r, weight.cols), group_stride,
                                   weight.scales + r * scale_stride, scale_stride, weight.group_size,
                                   x.int8_values.data() + first_token * x.stride,
                                   x.int8_scales.data() + first_token * x_blocks, x.stride, x.stride,
                                   y + first_token * out_stride + (r - row_begin), out_stride);
        });
    return;
  }
  const half_gemm_kernels::QuantizedTileSet& tiles = x.isa == GemmIsa::Avx2
                                                         ? half_gemm_kernels::avx2_quantized_tiles(weight.dtype)
                                                         : half_gemm_kernels::avx512_quantized_tiles(weight.dtype);
  half_gemm_kernels::for_each_tile(
      tiles.max_tokens, tiles.rows_for_tokens, x.num_tokens, row_begin, row_end,
      [&](int64_t r, int rows, int64_t first_token, int tokens) {
        tiles.tile(rows, tokens)(values + quantized::row_offset_bytes(weight.dtype, r, weight.cols), group_stride,
                                 weight.scales + r * scale_stride, scale_stride, weight.group_size,
                                 x.values.data() + first_token * x.stride, x.stride, x.stride,
                                 y + first_token * out_stride + (r - row_begin), out_stride);
      });
}

}  // namespace moe
