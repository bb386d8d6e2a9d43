#include "kernels/rotary.h"

#include <cmath>

namespace moe {

RotaryEmbedding::RotaryEmbedding(int head_dim, int rotary_dim, double theta)
    : head_dim_(head_dim), rotary_dim_(rotary_dim) {
  const int half = rotary_dim / 2;
  inv_freq_.resize(half);
  for (int i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(rotary_dim);
    inv_freq_[i] = 1.0f / static_cast<float>(std::pow(theta, static_cast<double>(exponent)));
  }
}

void RotaryEmbedding::apply(float* heads, int num_heads, int64_t position) const {
  const int half = rotary_dim_ / 2;
  thread_local std::vector<float> cos_table, sin_table;
  cos_table.resize(half);
  sin_table.resize(half);
  for (int i = 0; i < half; ++i) {
    const float angle = static_cast<float>(position) * inv_freq_[i];
    cos_table[i] = std::cos(angle);
    sin_table[i] = std::sin(angle);
  }
  for (int h = 0; h < num_heads; ++h) {
    float* x = heads + static_cast<int64_t>(h) * head_dim_;
    for (int i = 0; i < half; ++i) {
      const float a = x[i], b = x[i + half];
      x[i] = a * cos_table[i] - b * sin_table[i];
      x[i + half] = b * cos_table[i] + a * sin_table[i];
    }
  }
}

}  // namespace moe
