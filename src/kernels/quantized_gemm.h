#pragma once
// y = x · Wᵀ for quantized (Q8 or Q4, kernels/quantized_weight.h) weights and float32 activations,
// at any token count: the half-precision GEMM's register tiles and blocking, with each weight
// vector widened from int8 or int4 and multiplied by its group's scale in registers. At batch 1
// the GEMM reads a half (int8) or a quarter (int4) of bf16's bytes.
#include <cstdint>

#include "kernels/half_gemm.h"

namespace moe {

// y[t * out_stride + (r - row_begin)] = x[t] · W[r] for every token t and r in [row_begin, row_end).
// weight must be a tiled Q8 or Q4 view with the dtype and cols that x was packed for
// (pack_activations).
void quantized_gemm_rows(const PackedActivations& x, const WeightView& weight, int64_t row_begin, int64_t row_end,
                         float* y, int64_t out_stride);

}  // namespace moe
