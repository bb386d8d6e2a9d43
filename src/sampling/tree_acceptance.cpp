#include "sampling/tree_acceptance.h"

#include <string>

#include "common/error.h"
#include "sampling/logit_adjustments.h"

namespace moe {
namespace {

// The child of `node` that carries `token`, or -1. Siblings carry distinct tokens.
int32_t child_with(std::span<const int32_t> node_tokens, std::span<const int32_t> parents, int32_t node,
                   int32_t token) {
  for (size_t c = static_cast<size_t>(node) + 1; c < parents.size(); ++c)
    if (parents[c] == node && node_tokens[c] == token) return static_cast<int32_t>(c);
  return -1;
}

}  // namespace

std::vector<SampledToken> accept_draft_tree(const float* logits, int64_t vocab_size,
                                            std::span<const int32_t> node_tokens, std::span<const int32_t> parents,
                                            const msg::TokenSampling& sampling) {
  if (node_tokens.empty() || parents.size() != node_tokens.size() || parents[0] != -1)
    throw Error("a draft tree needs its root as node 0 and a parent for every node");
  std::vector<SampledToken> drawn;
  msg::TokenSampling draw = sampling;
  for (int32_t node = 0; node >= 0;) {
    draw.step = sampling.step + drawn.size();
    drawn.push_back(sample_token(logits + node * vocab_size, vocab_size, draw));
    // Penalties count each token accepted before the next draw, as plain decoding would.
    if (penalizes(draw)) draw.generated_ids.push_back(drawn.back().id);
    node = child_with(node_tokens, parents, node, drawn.back().id);
  }
  return drawn;
}

std::vector<int32_t> accepted_path(std::span<const int32_t> node_tokens, std::span<const int32_t> parents,
                                   std::span<const int32_t> accepted) {
  std::vector<int32_t> path = {0};
  for (int32_t token : accepted) {
    const int32_t child = child_with(node_tokens, parents, path.back(), token);
    if (child < 0)
      throw Error("verify result: token " + std::to_string(token) + " is not a draft after node " +
                  std::to_string(path.back()));
    path.push_back(child);
  }
  return path;
}

}  // namespace moe
