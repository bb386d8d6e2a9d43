#include "kernels/activation.h"

#include <cmath>

namespace moe {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

}  // namespace moe
