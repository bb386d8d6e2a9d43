#pragma once
// What the MoE tests and benchmarks share: seeded random activations, expert weights kept in a chosen
// storage dtype, valid top-k routings, a small layer shape and the comparison tolerance.
// Header-only so bench/moe can include it too.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/weight.h"
#include "kernels/weight_tiling.h"
#include "moe/moe_runner.h"

namespace moe::testing {

// A layer small enough for brute-force checks, with E/D splits for D = 1, 2, 4, 8 and 16.
constexpr int kExperts = 16;
constexpr int kTopK = 4;
constexpr int64_t kHidden = 40;
constexpr int64_t kWidth = 24;

// How far a float32 result may sit from its reference: 1e-5, relative once values exceed 1.
inline float tolerance_for(float expected) { return 1e-5f * std::max(1.0f, std::abs(expected)); }

// n floats uniform in [-scale, scale].
inline std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> out(n);
  for (float& v : out) v = dist(engine);
  return out;
}

// A weight matrix's bytes in its storage dtype (bf16 tiled, as a checkpoint's); the view points
// into them.
struct OwnedWeight {
  std::vector<float> f32;
  weight_tiling::TiledWeight bf16;
  WeightView view;
};

// A rows×cols matrix uniform in ±1/sqrt(cols), stored as F32 or BF16 (rounded with float_to_bf16).
inline std::unique_ptr<OwnedWeight> random_weight(int64_t rows, int64_t cols, DType dtype, uint64_t seed) {
  auto owned = std::make_unique<OwnedWeight>();
  owned->f32 = random_floats(static_cast<size_t>(rows * cols), seed, 1.0f / std::sqrt(static_cast<float>(cols)));
  owned->view = WeightView{owned->f32.data(), DType::F32, rows, cols};
  if (dtype == DType::BF16) {
    std::vector<uint16_t> bf16(owned->f32.size());
    std::transform(owned->f32.begin(), owned->f32.end(), bf16.begin(), float_to_bf16);
    owned->f32.clear();
    owned->bf16 = weight_tiling::tiled_copy(WeightView{bf16.data(), DType::BF16, rows, cols});
    owned->view = owned->bf16.view;
  }
  return owned;
}

// One MoE layer's experts with random weights; `weights` views into `storage`.
struct RandomExperts {
  std::vector<std::unique_ptr<OwnedWeight>> storage;
  ExpertWeights weights;
};

inline RandomExperts random_experts(int num_experts, int64_t hidden_size, int64_t width, DType dtype, uint64_t seed) {
  RandomExperts experts;
  experts.weights.hidden_size = hidden_size;
  experts.weights.intermediate_size = width;
  auto add = [&](int64_t rows, int64_t cols, std::vector<WeightView>& views) {
    experts.storage.push_back(random_weight(rows, cols, dtype, seed + experts.storage.size()));
    views.push_back(experts.storage.back()->view);
  };
  for (int e = 0; e < num_experts; ++e) {
    add(width, hidden_size, experts.weights.gate);
    add(width, hidden_size, experts.weights.up);
    add(hidden_size, width, experts.weights.down);
  }
  return experts;
}

// Each token picks top_k distinct experts uniformly at random, with positive weights.
inline Routing random_routing(int64_t num_tokens, int num_experts, int top_k, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> weight(0.05f, 1.0f);
  Routing routing;
  routing.num_tokens = num_tokens;
  routing.top_k = top_k;
  std::vector<int32_t> experts(static_cast<size_t>(num_experts));
  for (int64_t t = 0; t < num_tokens; ++t) {
    std::iota(experts.begin(), experts.end(), 0);
    for (int k = 0; k < top_k; ++k) {
      std::swap(experts[k], experts[k + engine() % (num_experts - k)]);
      routing.ids.push_back(experts[k]);
      routing.weights.push_back(weight(engine));
    }
  }
  return routing;
}

// One random input of the small layer: its experts, T tokens' activations and their routing.
struct RandomLayerInput {
  RandomExperts experts;
  std::vector<float> hidden;
  Routing routing;
};

inline RandomLayerInput random_layer_input(DType dtype, uint64_t seed, int64_t num_tokens) {
  return RandomLayerInput{random_experts(kExperts, kHidden, kWidth, dtype, seed),
                          random_floats(static_cast<size_t>(num_tokens * kHidden), seed + 1000),
                          random_routing(num_tokens, kExperts, kTopK, seed + 2000)};
}

}  // namespace moe::testing
