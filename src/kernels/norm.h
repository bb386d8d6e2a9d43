#pragma once
// RMSNorm as Hugging Face computes it in float32: x / sqrt(mean(x²) + eps) · weight.
#include <cstdint>

namespace moe {

// Normalises `rows` vectors of length `dim` (row stride `stride`), in place allowed (out == x).
void rms_norm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight, float eps, float* out);

}  // namespace moe
