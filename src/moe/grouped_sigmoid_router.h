#pragma once
// DeepSeek-V3's router ("noaux_tc"), which GLM-4.5 shares: each expert scores sigmoid(logit); a
// per-expert correction bias is added to those scores for choosing only. The experts are split
// contiguously into groups, each group ranked by the sum of its two best biased scores; only the best
// groups' experts compete, and the top-k of them by biased score are chosen. Their weights are their
// unbiased scores, renormalised over the k when asked, times a scaling factor.
#include <cstdint>

#include "kernels/weight.h"
#include "moe/moe_runner.h"

namespace moe {

struct GroupedSigmoidRule {
  int num_groups = 1;             // n_group: experts [g·E/G, (g+1)·E/G) form group g
  int kept_groups = 1;            // topk_group: the groups whose experts may be chosen
  bool normalize_top_k = true;    // divide the k weights by their sum (+ 1e-20, as transformers does)
  float scaling_factor = 1.0f;    // routed_scaling_factor, applied after normalising
};

// A moe::Error where route_tokens_grouped_sigmoid could not route over num_experts experts by `rule`
// (E not a multiple of num_groups, groups of fewer than two experts, fewer than top_k experts in the
// kept groups): what a model checks at load.
void check_grouped_sigmoid_rule(int64_t num_experts, int top_k, const GroupedSigmoidRule& rule);

// logits = hidden[T,H] · router_weightᵀ, then the rule above; correction_bias holds E floats. out's ids
// are in descending biased score (ties: lower id, for groups too), its weights the chosen experts'.
void route_tokens_grouped_sigmoid(const float* hidden, int64_t num_tokens, const WeightView& router_weight,
                                  const float* correction_bias, int top_k, const GroupedSigmoidRule& rule,
                                  Routing& out);

}  // namespace moe
