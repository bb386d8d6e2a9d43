#include "kernels/first_max.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace moe {
namespace {

// Every length from 1 to 40 (each lane count and tail) and a vocabulary's, values drawn from a few
// levels so that ties are common: the first maximum, as std::max_element finds it.
TEST(FirstMaxTest, MatchesMaxElementWithTies) {
  std::mt19937 random(3);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 40; ++n) lengths.push_back(n);
  lengths.push_back(151936);
  for (int64_t n : lengths)
    for (int levels : {2, 5, 1000}) {
      std::uniform_int_distribution<int> level(0, levels - 1);
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = static_cast<float>(level(random)) * 0.25f - 3.0f;
      EXPECT_EQ(first_max(x.data(), n), std::max_element(x.begin(), x.end()) - x.begin())
          << "n " << n << " levels " << levels;
    }
}

TEST(FirstMaxTest, NegativeInfinityAndNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::vector<float> x(20, -inf);
  EXPECT_EQ(first_max(x.data(), 20), 0);  // nothing above -infinity
  x[13] = -1e30f;
  EXPECT_EQ(first_max(x.data(), 20), 13);
  x[0] = nan;
  x[5] = nan;
  x[19] = nan;
  EXPECT_EQ(first_max(x.data(), 20), 13);  // a NaN is never the maximum, wherever it is
  x[17] = inf;
  EXPECT_EQ(first_max(x.data(), 20), 17);
  EXPECT_EQ(first_max(x.data(), 3), 0);  // NaN and -infinity only
}

}  // namespace
}  // namespace moe
