// The three expert-parallel ops against brute-force loops on random inputs, padding included.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "moe/expert_placement.h"
#include "moe/moe_ops.h"
#include "moe_fixtures.h"

namespace moe {
namespace {

using namespace testing;  // the small layer shape and the random inputs

// |actual - expected| ≤ 1e-5, relative once the values exceed 1.
void expect_close(float actual, float expected, const std::string& where) {
  EXPECT_NEAR(actual, expected, tolerance_for(expected)) << where;
}

// The local experts' views of one projection, in local order.
std::vector<WeightView> local_views(const std::vector<WeightView>& global, const std::vector<int32_t>& mapping) {
  std::vector<WeightView> local;
  for (int32_t g : mapping) local.push_back(global[g]);
  return local;
}

// Brute force op 1: scan every token for every local expert.
void expect_routing_tensors(const Routing& routing, const std::vector<int32_t>& mapping,
                            const MoeRoutingTensors& got) {
  const int64_t T = routing.num_tokens;
  ASSERT_EQ(got.num_tokens, T);
  ASSERT_EQ(got.num_routed_tokens.size(), mapping.size());
  ASSERT_EQ(got.routed_tokens.size(), mapping.size() * T);
  ASSERT_EQ(got.routed_token_weights.size(), mapping.size() * T);
  ASSERT_EQ(got.token_idx_map.size(), mapping.size() * T);
  for (size_t e = 0; e < mapping.size(); ++e) {
    int32_t count = 0;
    for (int64_t t = 0; t < T; ++t)
      for (int k = 0; k < routing.top_k; ++k) {
        if (routing.ids[t * routing.top_k + k] != mapping[e]) continue;
        EXPECT_EQ(got.routed_tokens[e * T + count], static_cast<uint32_t>(t));
        EXPECT_EQ(got.routed_token_weights[e * T + count], routing.weights[t * routing.top_k + k]);
        EXPECT_EQ(got.token_idx_map[e * T + count], k);
        ++count;
      }
    EXPECT_EQ(got.num_routed_tokens[e], count) << "local expert " << e;
    for (int64_t j = count; j < T; ++j) {
      EXPECT_EQ(got.routed_tokens[e * T + j], 0xFFFFFFFFu);
      EXPECT_EQ(got.routed_token_weights[e * T + j], 0.0f);
      EXPECT_EQ(got.token_idx_map[e * T + j], -1);
    }
  }
}

TEST(PrepareMoeRoutingTensors, MatchesBruteForceForEverySplitAndTokenCount) {
  for (uint64_t seed = 1; seed <= 20; ++seed)
    for (int64_t T : {0, 1, 2, 9, 37})
      for (int ep : {1, 2, 4, 8}) {
        const Routing routing = random_routing(T, kExperts, kTopK, seed * 100 + T);
        const ExpertPlacement placement = ExpertPlacement::random(kExperts, ep, seed);
        for (const std::vector<int32_t>& mapping : placement.device_expert_mapping) {
          MoeRoutingTensors got;
          prepare_moe_routing_tensors(routing.ids.data(), routing.weights.data(), T, kTopK, mapping, kExperts, got);
          expect_routing_tensors(routing, mapping, got);
        }
      }
}

TEST(PrepareMoeRoutingTensors, HandWorkedExample) {
  // Tokens 0..2 with K = 2 on a device holding global experts {3, 1} (local 0 = 3, local 1 = 1).
  const std::vector<int32_t> ids = {1, 3, 2, 0, 3, 1};
  const std::vector<float> weights = {0.6f, 0.4f, 0.7f, 0.3f, 0.9f, 0.1f};
  const std::vector<int32_t> mapping = {3, 1};
  MoeRoutingTensors got;
  prepare_moe_routing_tensors(ids.data(), weights.data(), 3, 2, mapping, 4, got);
  EXPECT_EQ(got.num_routed_tokens, (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(got.routed_tokens, (std::vector<uint32_t>{0, 2, 0xFFFFFFFFu, 0, 2, 0xFFFFFFFFu}));
  EXPECT_EQ(got.routed_token_weights, (std::vector<float>{0.4f, 0.9f, 0.0f, 0.6f, 0.1f, 0.0f}));
  EXPECT_EQ(got.token_idx_map, (std::vector<int32_t>{1, 0, -1, 0, 1, -1}));
}

TEST(PrepareMoeRoutingTensors, RejectsBadIds) {
  const std::vector<int32_t> ids = {0, 5};
  const std::vector<float> weights = {0.5f, 0.5f};
  MoeRoutingTensors got;
  EXPECT_THROW(prepare_moe_routing_tensors(ids.data(), weights.data(), 1, 2, std::vector<int32_t>{0, 1}, 4, got),
               Error);
  const std::vector<int32_t> repeated = {1, 1};
  EXPECT_THROW(prepare_moe_routing_tensors(repeated.data(), weights.data(), 1, 2, std::vector<int32_t>{1}, 4, got),
               Error);
  EXPECT_THROW(prepare_moe_routing_tensors(ids.data(), weights.data(), 1, 1, std::vector<int32_t>{0, 0}, 4, got),
               Error);
}

TEST(ProjectionToIntermediate, GathersRoutedRowsAndZeroesThePadding) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (uint64_t seed = 1; seed <= 6; ++seed)
      for (int64_t T : {0, 1, 5, 33}) {
        const auto [experts, hidden, routing] = random_layer_input(dtype, seed, T);
        const std::vector<int32_t> mapping = ExpertPlacement::random(kExperts, 2, seed).device_expert_mapping[1];
        MoeRoutingTensors tensors;
        prepare_moe_routing_tensors(routing.ids.data(), routing.weights.data(), T, kTopK, mapping, kExperts, tensors);
        std::vector<float> out(3, 42.0f);  // stale contents must not survive
        const auto local = local_views(experts.weights.gate, mapping);
        projection_to_intermediate(hidden.data(), T, tensors.routed_tokens, tensors.num_routed_tokens, local, out);
        ASSERT_EQ(out.size(), mapping.size() * T * kWidth);
        for (size_t e = 0; e < mapping.size(); ++e)
          for (int64_t j = 0; j < T; ++j)
            for (int64_t i = 0; i < kWidth; ++i) {
              const float got = out[(e * T + j) * kWidth + i];
              if (j >= tensors.num_routed_tokens[e]) {
                ASSERT_EQ(got, 0.0f);
                continue;
              }
              const int64_t token = tensors.routed_tokens[e * T + j];
              double expected = 0.0;
              for (int64_t h = 0; h < kHidden; ++h) expected += hidden[token * kHidden + h] * local[e].at(i, h);
              expect_close(got, static_cast<float>(expected), "expert " + std::to_string(e));
            }
      }
}

TEST(ProjectionToOutput, WeightsAndSumsEveryLocalContribution) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (uint64_t seed = 1; seed <= 6; ++seed)
      for (int64_t T : {0, 1, 5, 33})
        for (int ep : {1, 4}) {
          const auto [experts, hidden, routing] = random_layer_input(dtype, seed, T);
          const std::vector<int32_t> mapping = ExpertPlacement::random(kExperts, ep, seed).device_expert_mapping[0];
          MoeRoutingTensors tensors;
          prepare_moe_routing_tensors(routing.ids.data(), routing.weights.data(), T, kTopK, mapping, kExperts,
                                      tensors);
          // Any activations will do; the padding rows are zero as op 2 leaves them.
          std::vector<float> act = random_floats(mapping.size() * T * kWidth, seed + 11);
          for (size_t e = 0; e < mapping.size(); ++e)
            std::fill(act.begin() + (e * T + tensors.num_routed_tokens[e]) * kWidth,
                      act.begin() + (e + 1) * T * kWidth, 0.0f);
          const auto local = local_views(experts.weights.down, mapping);
          std::vector<float> out(T * kHidden, 42.0f);
          projection_to_output(act.data(), tensors.token_idx_map, tensors.routed_tokens, tensors.num_routed_tokens,
                               tensors.routed_token_weights, local, T, kTopK, out.data());

          std::vector<double> expected(T * kHidden, 0.0);
          for (size_t e = 0; e < mapping.size(); ++e)
            for (int32_t j = 0; j < tensors.num_routed_tokens[e]; ++j) {
              const int64_t token = tensors.routed_tokens[e * T + j];
              const float weight = tensors.routed_token_weights[e * T + j];
              for (int64_t h = 0; h < kHidden; ++h) {
                double projected = 0.0;
                for (int64_t i = 0; i < kWidth; ++i) projected += act[(e * T + j) * kWidth + i] * local[e].at(h, i);
                expected[token * kHidden + h] += weight * projected;
              }
            }
          for (int64_t i = 0; i < T * kHidden; ++i)
            expect_close(out[i], static_cast<float>(expected[i]), "element " + std::to_string(i));
        }
}

TEST(AllReduceSum, EveryBufferEndsWithTheSum) {
  for (int devices : {1, 2, 4, 8}) {
    std::vector<std::vector<float>> buffers;
    std::vector<float*> pointers;
    std::vector<float> expected(10, 0.0f);
    for (int d = 0; d < devices; ++d) {
      buffers.push_back(random_floats(10, d + 1));
      for (int i = 0; i < 10; ++i) expected[i] += buffers.back()[i];
    }
    for (auto& b : buffers) pointers.push_back(b.data());
    all_reduce_sum(pointers, 10);
    for (const auto& b : buffers)
      for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(b[i], expected[i]);
  }
}

}  // namespace
}  // namespace moe
