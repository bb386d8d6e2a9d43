#include "kernels/rotary.h"

#include <algorithm>
#include <cmath>
#include <utility>

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

RotaryEmbedding::RotaryEmbedding(std::vector<float> inv_freq, float scale, bool interleaved)
    : head_dim_(static_cast<int>(inv_freq.size()) * 2), rotary_dim_(head_dim_), inv_freq_(std::move(inv_freq)),
      scale_(scale), interleaved_(interleaved) {}

void RotaryEmbedding::apply(float* first, int num_vectors, int64_t stride, int64_t position) const {
  const int half = rotary_dim_ / 2;
  thread_local std::vector<float> cos_table, sin_table, pairs;
  cos_table.resize(half);
  sin_table.resize(half);
  for (int i = 0; i < half; ++i) {
    const float angle = static_cast<float>(position) * inv_freq_[i];
    cos_table[i] = std::cos(angle) * scale_;
    sin_table[i] = std::sin(angle) * scale_;
  }
  pairs.resize(rotary_dim_);
  for (int h = 0; h < num_vectors; ++h) {
    float* x = first + h * stride;
    if (interleaved_) {
      for (int i = 0; i < half; ++i) pairs[i] = x[2 * i], pairs[i + half] = x[2 * i + 1];
      std::copy(pairs.begin(), pairs.end(), x);
    }
    for (int i = 0; i < half; ++i) {
      const float a = x[i], b = x[i + half];
      x[i] = a * cos_table[i] - b * sin_table[i];
      x[i + half] = b * cos_table[i] + a * sin_table[i];
    }
  }
}

}  // namespace moe
