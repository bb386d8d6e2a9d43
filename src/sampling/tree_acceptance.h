#pragma once
// Speculative acceptance over a verified draft tree: which draft tokens the target model keeps, and
// the token it adds after them.
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampler.h"

namespace moe {

// node_tokens/parents describe the tree (node 0 is the root: the request's last token, which the
// verify fed; parents[i] < i, -1 for the root only) and logits holds one row per node. From the
// root, the token at each node is drawn from that node's row with the request's own draw for that
// output index (sampling.step + depth); while a child of the node carries the drawn token, the walk
// moves to it. Returns the drawn tokens: the accepted drafts, then the first token no child
// carried (or the one drawn at a leaf).
//
// For temperature 0 this is greedy acceptance. For temperature > 0 it is rejection sampling with
// deterministic drafts (each draft token is proposed with probability 1): a draft x is kept with
// probability p(x) and otherwise the residual p without the rejected drafts is drawn from, which is
// drawing from p itself. Drawing with the request's (seed, output index) makes every token the one
// non-speculative decoding draws from the same logits, so the output distribution is unchanged.
std::vector<SampledToken> accept_draft_tree(const float* logits, int64_t vocab_size,
                                            std::span<const int32_t> node_tokens, std::span<const int32_t> parents,
                                            const msg::TokenSampling& sampling);

// The nodes of a tree that carry `accepted` (the drafts accept_draft_tree kept, in order), root
// first; a token no child of the node before carries is a moe::Error (a result that does not fit
// the tree).
std::vector<int32_t> accepted_path(std::span<const int32_t> node_tokens, std::span<const int32_t> parents,
                                   std::span<const int32_t> accepted);

}  // namespace moe
