// The runner backends agree with each other and with a double-precision formula, for every shard count.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "moe/moe_runner.h"
#include "moe_fixtures.h"

namespace moe {
namespace {

using namespace testing;  // the small layer shape and the random inputs

std::vector<float> run(MoeBackend backend, const ExpertPlacement& placement, const std::vector<float>& hidden,
                       const Routing& routing, const ExpertWeights& experts) {
  std::vector<float> out(hidden.size(), 42.0f);
  MoeRunner::create(backend, placement)->run(hidden.data(), routing.num_tokens, routing, experts, out.data());
  return out;
}

void expect_all_close(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tolerance_for(expected[i])) << what << " element " << i;
}

TEST(ReferenceMoeRunner, MatchesTheMoeFormulaInDoublePrecision) {
  const int64_t T = 3;
  const auto [experts, hidden, routing] = random_layer_input(DType::BF16, 5, T);
  const std::vector<float> out = run(MoeBackend::Reference, ExpertPlacement::uniform(kExperts, 1), hidden, routing,
                                     experts.weights);
  const ExpertWeights& w = experts.weights;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> expected(kHidden, 0.0);
    for (int k = 0; k < kTopK; ++k) {
      const int e = routing.ids[t * kTopK + k];
      std::vector<double> act(kWidth);
      for (int64_t i = 0; i < kWidth; ++i) {
        double gate = 0.0, up = 0.0;
        for (int64_t h = 0; h < kHidden; ++h) {
          gate += hidden[t * kHidden + h] * w.gate[e].at(i, h);
          up += hidden[t * kHidden + h] * w.up[e].at(i, h);
        }
        act[i] = gate / (1.0 + std::exp(-gate)) * up;
      }
      for (int64_t h = 0; h < kHidden; ++h) {
        double y = 0.0;
        for (int64_t i = 0; i < kWidth; ++i) y += act[i] * w.down[e].at(h, i);
        expected[h] += routing.weights[t * kTopK + k] * y;
      }
    }
    for (int64_t h = 0; h < kHidden; ++h) EXPECT_NEAR(out[t * kHidden + h], expected[h], 1e-5);
  }
}

TEST(GroupedMoeRunner, EqualsReferenceForEveryPlacementAndDtype) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (uint64_t seed = 1; seed <= 3; ++seed)
      for (int64_t T : {0, 1, 6, 40}) {
        const auto [experts, hidden, routing] = random_layer_input(dtype, seed, T);
        const std::vector<float> reference =
            run(MoeBackend::Reference, ExpertPlacement::uniform(kExperts, 1), hidden, routing, experts.weights);
        for (int ep : {1, 2, 4, 8}) {
          for (const ExpertPlacement& placement :
               {ExpertPlacement::uniform(kExperts, ep), ExpertPlacement::random(kExperts, ep, seed)}) {
            const std::string what = std::string(dtype_name(dtype)) + " T=" + std::to_string(T) +
                                     " D=" + std::to_string(ep);
            expect_all_close(run(MoeBackend::Grouped, placement, hidden, routing, experts.weights), reference, what);
          }
        }
      }
}

TEST(GroupedMoeRunner, AllReducedShardsEqualTheSingleDeviceOutput) {
  const int64_t T = 25;
  const auto [experts, hidden, routing] = random_layer_input(DType::BF16, 8, T);
  const ExpertPlacement single = ExpertPlacement::uniform(kExperts, 1);
  const std::vector<float> one_device = run(MoeBackend::Grouped, single, hidden, routing, experts.weights);
  // A permutation within one device changes nothing: contributions are summed in top-k order.
  EXPECT_EQ(run(MoeBackend::Grouped, ExpertPlacement::random(kExperts, 1, 77), hidden, routing, experts.weights),
            one_device);
  for (int ep : {2, 4, 8})
    for (uint64_t seed : {1, 2, 3})
      expect_all_close(run(MoeBackend::Grouped, ExpertPlacement::random(kExperts, ep, seed), hidden, routing,
                           experts.weights),
                       one_device, "D=" + std::to_string(ep));
}

TEST(GroupedMoeRunner, AutoIsGrouped) {
  const auto [experts, hidden, routing] = random_layer_input(DType::F32, 2, 4);
  const ExpertPlacement placement = ExpertPlacement::random(kExperts, 2, 9);
  EXPECT_EQ(run(MoeBackend::Auto, placement, hidden, routing, experts.weights),
            run(MoeBackend::Grouped, placement, hidden, routing, experts.weights));
}

TEST(GroupedMoeRunner, RejectsAPlacementForAnotherExpertCount) {
  const auto [experts, hidden, routing] = random_layer_input(DType::F32, 2, 1);
  EXPECT_THROW(run(MoeBackend::Grouped, ExpertPlacement::uniform(8, 2), hidden, routing, experts.weights), Error);
}

TEST(MoeRunnerCreate, TheCudaBackendIsRefusedOnTheCpu) {
  try {
    (void)MoeRunner::create(MoeBackend::Cuda, ExpertPlacement::uniform(8, 1));
    FAIL() << "expected a moe::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--device cuda"), std::string::npos) << e.what();
  }
}

TEST(ParseMoeBackend, KnowsTheFourNames) {
  EXPECT_EQ(parse_moe_backend("auto"), MoeBackend::Auto);
  EXPECT_EQ(parse_moe_backend("reference"), MoeBackend::Reference);
  EXPECT_EQ(parse_moe_backend("grouped"), MoeBackend::Grouped);
  EXPECT_EQ(parse_moe_backend("cuda"), MoeBackend::Cuda);
  try {
    parse_moe_backend("triton");
    FAIL() << "expected a moe::Error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("triton"), std::string::npos);
    EXPECT_NE(message.find("auto, reference, grouped, cuda"), std::string::npos);
  }
}

}  // namespace
}  // namespace moe
