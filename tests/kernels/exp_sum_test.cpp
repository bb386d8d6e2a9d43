// sum_of_exps against reference::sum_of_exps (double-precision std::exp): every length around the
// 8-lane and 1024-term block edges and a whole vocabulary, with and without the per-term output, a
// temperature scale, and terms far below e^-87 that must count as zero.
#include "kernels/exp_sum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/reference.h"

namespace moe {
namespace {

std::vector<float> random_logits(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng);
  return x;
}

TEST(SumOfExps, MatchesDoublePrecisionAtEveryLength) {
  for (const int64_t n : {0, 1, 7, 8, 9, 15, 1023, 1024, 1025, 2049, 151936})
    for (const float scale : {1.0f, 1.0f / 0.7f}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " scale " << scale);
      const std::vector<float> x = random_logits(n, static_cast<uint32_t>(n));
      const float shift = n ? *std::max_element(x.begin(), x.end()) : 0.0f;
      std::vector<float> terms(static_cast<size_t>(n), -1.0f);
      const double total = sum_of_exps(x.data(), n, shift, scale, terms.data());
      std::vector<double> want(static_cast<size_t>(n));
      const double expected = reference::sum_of_exps(x.data(), n, shift, scale, want.data());
      for (int64_t i = 0; i < n; ++i) {
        const double arg = (static_cast<double>(x[i]) - shift) * scale;
        // The exp's own 2e-7, and the argument's float32 rounding, which e^x turns into |x| ulps.
        ASSERT_NEAR(terms[i], want[i], (2e-7 + 1.2e-7 * std::abs(arg)) * want[i]) << "term " << i;
      }
      EXPECT_NEAR(total, expected, 1e-6 * expected);
      EXPECT_EQ(sum_of_exps(x.data(), n, shift, scale), total) << "the total does not depend on out";
    }
}

// Scores 100 below the maximum are under e^-87: zero, not a denormal or garbage, in the vector
// body and in the scalar remainder alike.
TEST(SumOfExps, TermsBelowTheCutoffAreZero) {
  std::vector<float> x(19, -100.0f);
  x[3] = 0.0f;
  std::vector<float> terms(x.size(), -1.0f);
  EXPECT_EQ(sum_of_exps(x.data(), static_cast<int64_t>(x.size()), 0.0f, 1.0f, terms.data()), 1.0);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(terms[i], i == 3 ? 1.0f : 0.0f) << i;
}

}  // namespace
}  // namespace moe
