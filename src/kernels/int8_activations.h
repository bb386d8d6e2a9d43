#pragma once
// Activations quantized to int8 for the integer-product quantized GEMM (KernelDType::Int8): each
// token's columns in blocks of 32 (quantized::kChunkCols, one tiled chunk), each block symmetric
// with a scale of its own, max|x| / 127, and the values round(x / scale). A block's products with
// int8 or int4 weights then sum exactly in int32; only the rounding of x to 255 levels per block
// differs from float32 products.
#include <cstdint>

namespace moe {

constexpr int kInt8ActivationLevel = 127;

// x[num_tokens, cols] into values[num_tokens, stride] (zeros past cols) and
// scales[num_tokens, stride / 32]; stride is a multiple of 32 at least cols. An all-zero block gets
// scale 0.
void quantize_activation_blocks(const float* x, int64_t num_tokens, int64_t cols, int64_t stride, int8_t* values,
                                float* scales);

}  // namespace moe
