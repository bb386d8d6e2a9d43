#pragma once
// Runs the routed experts of one MoE layer: out[T,H] = Σ_k weight[t,k] · expert_{ids[t,k]}(hidden[t]).
#include <memory>
#include <string>

#include "moe/expert_placement.h"
#include "moe/expert_weights.h"
#include "moe/routing.h"

namespace moe {

enum class MoeBackend { Auto, Reference, Grouped };

// "auto" | "reference" | "grouped"; anything else is a moe::Error listing the choices.
MoeBackend parse_moe_backend(const std::string& name);

class MoeRunner {
 public:
  virtual ~MoeRunner() = default;
  // out is overwritten. hidden and out are [num_tokens, H] row-major.
  virtual void run(const float* hidden, int64_t num_tokens, const Routing& routing, const ExpertWeights& experts,
                   float* out) = 0;

  // Reference: a per-token loop over its k experts (the oracle). Grouped: the three expert-parallel
  // ops of moe_ops.h (prepare_moe_routing_tensors, projection_to_intermediate, projection_to_output)
  // over every device of the placement, then the all-reduce. Auto picks Grouped.
  static std::unique_ptr<MoeRunner> create(MoeBackend backend, const ExpertPlacement& placement);
};

}  // namespace moe
