#pragma once
// The routed experts of one MoE layer: the router picks each token's top-k experts, and a runner
// computes out[T,H] = Σ_k weight[t,k] · expert_{ids[t,k]}(hidden[t]).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/weight.h"
#include "moe/expert_placement.h"
#include "parallel/communicator.h"

namespace moe {

// The router's choice for T tokens (route_tokens below, or the sigmoid rule of
// grouped_sigmoid_router.h): ids[t*K + j] is token t's j-th expert in the order the rule ranks them
// (descending router probability here), weights[t*K + j] its weight in the expert sum.
struct Routing {
  int64_t num_tokens = 0;
  int top_k = 0;
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// Expert limiting (speculative verify): the tokens marked in `limited` ([T], 1 = limited) share one
// pool of at most max_experts experts, those with the largest router probability summed over them
// (ties: lower id); each limited token takes its top-k from the pool. Off when max_experts is 0 or no
// token is marked; a pool of every expert routes exactly as no limit.
struct ExpertLimit {
  int max_experts = 0;
  std::span<const uint8_t> limited;

  // Whether any token is limited.
  bool active() const;
};

// logits = hidden[T,H] · router_weightᵀ, then softmax, top-k (ties broken by lower id), renormalise.
// With `limit`, limited tokens choose among the pool's experts only: their weights are still the
// router's softmax probabilities over every expert, renormalised over the k when the model asks.
void route_tokens(const float* hidden, int64_t num_tokens, const WeightView& router_weight, int top_k,
                  bool normalize_top_k, Routing& out, const ExpertLimit& limit = {});
// Sizes `out` for num_tokens rows of top_k and returns the router logits hidden[T,H] · router_weightᵀ,
// [T, E]: where every routing rule starts.
std::vector<float> router_logits(const float* hidden, int64_t num_tokens, const WeightView& router_weight, int top_k,
                                 Routing& out);
// The pool of an expert limit: the max_experts experts with the largest summed probability over the
// limited tokens, ascending ids. probs is [T, num_experts].
std::vector<int32_t> expert_pool(const float* probs, int64_t num_tokens, int num_experts, const ExpertLimit& limit);

// The weights of one MoE layer's routed experts, in global expert order.
struct ExpertWeights {
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // one expert's width H'
  std::vector<WeightView> gate;   // per expert [H', H]
  std::vector<WeightView> up;     // per expert [H', H]
  std::vector<WeightView> down;   // per expert [H, H']
  int num_experts() const { return static_cast<int>(gate.size()); }
};

// Reference and Grouped run on the CPU; Cuda is the GPU model's grouped kernels (--device cuda), which
// Auto also picks there.
enum class MoeBackend { Auto, Reference, Grouped, Cuda };

// "auto" | "reference" | "grouped" | "cuda"; anything else is a moe::Error listing the choices.
MoeBackend parse_moe_backend(const std::string& name);

class MoeRunner {
 public:
  virtual ~MoeRunner() = default;
  // out is overwritten. hidden and out are [num_tokens, H] row-major.
  virtual void run(const float* hidden, int64_t num_tokens, const Routing& routing, const ExpertWeights& experts,
                   float* out) = 0;

  // Reference: a per-token loop over its k experts (the oracle). Grouped: the three expert-parallel
  // ops of moe_ops.h (prepare_moe_routing_tensors, projection_to_intermediate, projection_to_output)
  // over every device of the placement, then the all-reduce. Auto picks Grouped; Cuda is a moe::Error
  // (that runner lives in the GPU model). With `group` (the placement's devices being processes), Grouped
  // runs only the device of the group's rank and all-reduces across the group; Reference is refused.
  static std::unique_ptr<MoeRunner> create(MoeBackend backend, const ExpertPlacement& placement,
                                           Communicator* group = nullptr);
  // Grouped over the experts of the placement's device `shard` only, its partial output left for the
  // caller to sum with the other shards' (tensor × expert-parallel ranks sum it with the rest of the
  // feed-forward block in one all-reduce); Reference is refused.
  static std::unique_ptr<MoeRunner> create_for_shard(MoeBackend backend, const ExpertPlacement& placement, int shard);
};

}  // namespace moe
