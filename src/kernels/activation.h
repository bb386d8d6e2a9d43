#pragma once
// SwiGLU: gate[i] = silu(gate[i]) * up[i], in place on gate.
#include <cstdint>

namespace moe {

void silu_mul(float* gate, const float* up, int64_t n);
float sigmoid(float x);

}  // namespace moe
