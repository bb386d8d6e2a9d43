#include "model/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace moe {
namespace {

// 0.1 · m · ln(scale) + 1, or 1 for scale <= 1.
double mscale_of(double scale, double m) { return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; }

// The dimension whose frequency turns `rotations` times over the original context.
double correction_dim(double rotations, int dim, double theta, int64_t context) {
  return dim * std::log(static_cast<double>(context) / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(theta));
}

}  // namespace

std::vector<float> yarn_inv_freq(int dim, double theta, const YarnScaling& yarn) {
  double low = correction_dim(yarn.beta_fast, dim, theta, yarn.original_max_position_embeddings);
  double high = correction_dim(yarn.beta_slow, dim, theta, yarn.original_max_position_embeddings);
  if (yarn.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  const float ramp_low = static_cast<float>(low), ramp_span = static_cast<float>(high - low);
  const float factor = static_cast<float>(yarn.factor);
  std::vector<float> inv_freq(static_cast<size_t>(dim / 2));
  for (int i = 0; i < dim / 2; ++i) {
    const float pos_freq = std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / static_cast<float>(dim));
    const float extrapolation = 1.0f / pos_freq, interpolation = 1.0f / (factor * pos_freq);
    const float keep = 1.0f - std::clamp((static_cast<float>(i) - ramp_low) / ramp_span, 0.0f, 1.0f);
    inv_freq[static_cast<size_t>(i)] = interpolation * (1.0f - keep) + extrapolation * keep;
  }
  return inv_freq;
}

double yarn_attention_factor(const YarnScaling& yarn) {
  if (yarn.attention_factor) return *yarn.attention_factor;
  if (yarn.mscale != 0.0 && yarn.mscale_all_dim != 0.0)
    return mscale_of(yarn.factor, yarn.mscale) / mscale_of(yarn.factor, yarn.mscale_all_dim);
  return mscale_of(yarn.factor, 1.0);
}

double yarn_softmax_scale_factor(const YarnScaling& yarn) {
  if (yarn.mscale_all_dim == 0.0) return 1.0;
  const double m = mscale_of(yarn.factor, yarn.mscale_all_dim);
  return m * m;
}

}  // namespace moe
