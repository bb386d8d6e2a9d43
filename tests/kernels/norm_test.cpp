// rms_norm against reference::rms_norm in double precision: one element to a large hidden size,
// rows whose mean square is eps's size and far above it, a row stride wider than the rows whose
// gaps must stay untouched, and in place.
#include "kernels/norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/reference.h"

namespace moe {
namespace {

constexpr float kSentinel = -12345.0f;
constexpr float kEps = 1e-6f;

// rows × stride normal values of standard deviation `spread`, and a weight around 1.
struct NormProblem {
  int64_t rows, dim, stride;
  std::vector<float> x, weight;

  NormProblem(int64_t rows_, int64_t dim_, float spread) : rows(rows_), dim(dim_), stride(dim_ + 3) {
    std::mt19937 rng(static_cast<uint32_t>(dim));
    std::normal_distribution<float> normal;
    for (int64_t i = 0; i < rows * stride; ++i) x.push_back(spread * normal(rng));
    for (int64_t i = 0; i < dim; ++i) weight.push_back(1.0f + 0.5f * normal(rng));
  }
};

TEST(RmsNorm, MatchesReferenceAndLeavesTheStrideGapsAlone) {
  for (const int64_t dim : {1, 7, 64, 128, 2048, 4096})
    for (const float spread : {1e-3f, 1.0f, 100.0f}) {
      SCOPED_TRACE(::testing::Message() << "dim " << dim << " spread " << spread);
      const NormProblem p(5, dim, spread);
      std::vector<float> out(p.x.size(), kSentinel);
      rms_norm(p.x.data(), p.rows, dim, p.stride, p.weight.data(), kEps, out.data());
      std::vector<double> want(static_cast<size_t>(p.rows * dim));
      reference::rms_norm(p.x.data(), p.rows, dim, p.stride, p.weight.data(), kEps, want.data());
      // A few roundings, and float32's sum of dim squares, which drifts by about √dim ulps.
      const double tolerance = 3e-7 + 3e-8 * std::sqrt(static_cast<double>(dim));
      for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t i = 0; i < p.stride; ++i) {
          const float got = out[r * p.stride + i];
          if (i >= dim) {
            ASSERT_EQ(got, kSentinel) << "wrote into the gap after row " << r;
            continue;
          }
          const double expected = want[r * dim + i];
          ASSERT_NEAR(got, expected, tolerance * std::abs(expected)) << "row " << r << ", element " << i;
        }
    }
}

TEST(RmsNorm, InPlaceGivesTheSameResult) {
  const NormProblem p(3, 100, 1.0f);
  std::vector<float> out(p.x.size()), in_place = p.x;
  rms_norm(p.x.data(), p.rows, p.dim, p.stride, p.weight.data(), kEps, out.data());
  rms_norm(in_place.data(), p.rows, p.dim, p.stride, p.weight.data(), kEps, in_place.data());
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t i = 0; i < p.dim; ++i) ASSERT_EQ(in_place[r * p.stride + i], out[r * p.stride + i]) << r << ", " << i;
}

}  // namespace
}  // namespace moe
