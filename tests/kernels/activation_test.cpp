// sigmoid and SwiGLU's silu_mul against their double-precision references, over inputs wide enough
// that e^-x overflows float32.
#include "kernels/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/reference.h"

namespace moe {
namespace {

// A few float32 roundings of the result. Under float32's smallest normal number the sigmoid loses
// its precision, then flushes to zero: an error of up to that number, times `factor`, whatever
// multiplies the sigmoid afterwards.
double tolerance(double want, double factor = 1.0) {
  return 4e-7 * std::abs(want) + std::numeric_limits<float>::min() * std::abs(factor);
}

TEST(Sigmoid, MatchesReference) {
  for (float x = -100.0f; x < 100.0f; x += 0.37f) {
    const double want = reference::sigmoid(x);
    ASSERT_NEAR(sigmoid(x), want, tolerance(want)) << x;
  }
}

TEST(SiluMul, MatchesReference) {
  const int64_t n = 1003;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> gate(n), up(n);
  for (int64_t i = 0; i < n; ++i) {
    gate[i] = -100.0f + 200.0f * static_cast<float>(i) / static_cast<float>(n - 1);
    up[i] = normal(rng);
  }
  std::vector<float> got = gate;
  silu_mul(got.data(), up.data(), n);
  std::vector<double> want(static_cast<size_t>(n));
  reference::silu_mul(gate.data(), up.data(), n, want.data());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[i], want[i], tolerance(want[i], gate[i] * up[i])) << "gate " << gate[i] << ", up " << up[i];
}

}  // namespace
}  // namespace moe
