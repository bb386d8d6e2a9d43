#include "kernels/norm.h"

#include <cmath>

namespace moe {

void rms_norm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight, float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * stride;
    float* o = out + r * stride;
    float sum = 0.0f;
    for (int64_t i = 0; i < dim; ++i) sum += in[i] * in[i];
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) o[i] = weight[i] * (in[i] * scale);
  }
}

}  // namespace moe
