// simd::exp8 against std::exp in double precision over a dense sweep of its input range.
#include "kernels/vector_exp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <limits>

namespace moe {
namespace {

// exp8 of x in every lane, checked to agree across lanes.
float exp_of(float x) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, simd::exp8(_mm256_set1_ps(x)));
  for (float lane : lanes) EXPECT_EQ(std::bit_cast<uint32_t>(lane), std::bit_cast<uint32_t>(lanes[0]));
  return lanes[0];
}

// The largest relative error of exp8 over count evenly spaced inputs in [lo, hi], eight per call.
double max_relative_error(float lo, float hi, int64_t count) {
  double worst = 0.0;
  alignas(32) float inputs[8], results[8];
  for (int64_t i = 0; i < count; i += 8) {
    for (int lane = 0; lane < 8; ++lane)
      inputs[lane] = std::min(hi, lo + static_cast<float>(static_cast<double>(hi - lo) * (i + lane) / (count - 1)));
    _mm256_store_ps(results, simd::exp8(_mm256_load_ps(inputs)));
    for (int lane = 0; lane < 8; ++lane) {
      const double want = std::exp(static_cast<double>(inputs[lane]));
      worst = std::max(worst, std::abs(results[lane] - want) / want);
    }
  }
  return worst;
}

TEST(VectorExp, RelativeErrorBelow2e7OverTheSoftmaxRange) {
  // Every representable input in [-1, 0] is within a few ulps of one of these points.
  EXPECT_LT(max_relative_error(-1.0f, 0.0f, int64_t{1} << 24), 2e-7);
  EXPECT_LT(max_relative_error(simd::kExpLowestInput, 0.0f, int64_t{1} << 24), 2e-7);
  EXPECT_LT(max_relative_error(0.0f, 88.0f, int64_t{1} << 22), 2e-7);
}

TEST(VectorExp, ExactAtZeroAndPowersOfE) {
  EXPECT_EQ(exp_of(0.0f), 1.0f);
  EXPECT_EQ(exp_of(-0.0f), 1.0f);
  EXPECT_NEAR(exp_of(-1.0f), 0.36787944117144233, 0.36787944117144233 * 2e-7);
  EXPECT_NEAR(exp_of(-20.0f), 2.061153622438558e-09, 2.061153622438558e-09 * 2e-7);
}

TEST(VectorExp, ZeroBelowTheSmallestNormalResult) {
  EXPECT_GE(exp_of(simd::kExpLowestInput), std::numeric_limits<float>::min());
  for (float x = -87.34f; x > -200.0f; x -= 0.37f) EXPECT_EQ(exp_of(x), 0.0f) << x;
  EXPECT_EQ(exp_of(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_of(-std::numeric_limits<float>::max()), 0.0f);
  EXPECT_EQ(exp_of(std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

TEST(VectorExp, LanesAreIndependent) {
  alignas(32) const float inputs[8] = {0.0f, -1.0f, -100.0f, -0.5f, 3.0f, -87.0f, -1e-6f, -10.0f};
  alignas(32) float results[8];
  _mm256_store_ps(results, simd::exp8(_mm256_load_ps(inputs)));
  for (int lane = 0; lane < 8; ++lane) EXPECT_EQ(results[lane], exp_of(inputs[lane])) << "lane " << lane;
}

}  // namespace
}  // namespace moe
