#pragma once
// The weights of one MoE layer's routed experts, in global expert order.
#include <vector>

#include "kernels/weight.h"

namespace moe {

struct ExpertWeights {
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // one expert's width H'
  std::vector<WeightView> gate;   // per expert [H', H]
  std::vector<WeightView> up;     // per expert [H', H]
  std::vector<WeightView> down;   // per expert [H, H']
  int num_experts() const { return static_cast<int>(gate.size()); }
};

}  // namespace moe
