#include "kernels/int8_activations.h"

#include <algorithm>
#include <cmath>

#include "kernels/quantized_weight.h"

namespace moe {

void quantize_activation_blocks(const float* x, int64_t num_tokens, int64_t cols, int64_t stride, int8_t* values,
                                float* scales) {
  constexpr int64_t kBlock = quantized::kChunkCols;
  const int64_t blocks = stride / kBlock;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* row = x + t * cols;
    int8_t* out = values + t * stride;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * kBlock, present = std::clamp<int64_t>(cols - first, 0, kBlock);
      float largest = 0.0f;
      for (int64_t j = 0; j < present; ++j) largest = std::max(largest, std::abs(row[first + j]));
      const float scale = largest / kInt8ActivationLevel;
      scales[t * blocks + b] = scale;
      const float inverse = largest > 0.0f ? kInt8ActivationLevel / largest : 0.0f;
      for (int64_t j = 0; j < present; ++j)
        out[first + j] = static_cast<int8_t>(std::clamp(std::nearbyint(row[first + j] * inverse), -127.0f, 127.0f));
      std::fill(out + first + present, out + first + kBlock, int8_t{0});
    }
  }
}

}  // namespace moe
