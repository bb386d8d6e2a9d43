#pragma once
// The router: softmax over experts, top-k in descending probability, optional renormalisation.
#include <cstdint>
#include <vector>

#include "kernels/weight.h"

namespace moe {

// Top-k routing of T tokens: ids[t*K + j] is token t's j-th expert (descending router probability),
// weights[t*K + j] its weight (renormalised over the k when the model asks for it).
struct Routing {
  int64_t num_tokens = 0;
  int top_k = 0;
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// logits = hidden[T,H] · router_weightᵀ, then softmax, top-k (ties broken by lower id), renormalise.
void route_tokens(const float* hidden, int64_t num_tokens, const WeightView& router_weight, int top_k,
                  bool normalize_top_k, Routing& out);

}  // namespace moe
