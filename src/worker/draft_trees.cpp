#include "worker/draft_trees.h"

#include <algorithm>

#include "common/error.h"
#include "model/forward_batch.h"
#include "sampling/sampler.h"

namespace moe {
namespace {

GrowingTree start_tree(const msg::WorkerBatch& batch, const SequenceTables& tables, size_t i, int64_t first_token) {
  const msg::WorkerSequence& s = batch.sequences[i];
  const std::span<const int32_t> slots = tables.table(s.id);
  const auto nodes = static_cast<size_t>(s.num_new_tokens);
  if (s.tree_parents.size() != nodes || nodes < 2 || slots.size() < nodes || s.draft_topk < 1 || !s.needs_logits)
    throw Error("a draft-then-verify sequence needs a tree shape of at least two nodes, a slot for each, and logits");
  GrowingTree tree;
  tree.sequence = i;
  tree.first_token = first_token;
  tree.prefix_slots.assign(slots.begin(), slots.end() - static_cast<int64_t>(nodes));
  tree.node_slots.assign(slots.end() - static_cast<int64_t>(nodes), slots.end());
  tree.depths = tree_depths(s.tree_parents);
  for (size_t n = 1; n < nodes; ++n)
    if (tree.depths[n] < tree.depths[n - 1] || tree.depths[n] > tree.depths[n - 1] + 1)
      throw Error("a draft-then-verify tree shape must list its nodes layer by layer");
  tree.topk = s.draft_topk;
  tree.tokens = {batch.token_ids[static_cast<size_t>(first_token)]};
  tree.parents = {-1};
  tree.scores = {0.0f};
  return tree;
}

// Adds the next layer: the best children (by cumulative score; ties to the earlier parent, then the
// more probable child) of the newest layer's nodes, whose logits rows start at `rows`.
void grow_layer(GrowingTree& tree, const float* rows, int64_t vocab) {
  struct Candidate {
    float score;
    int32_t parent, token;
  };
  std::vector<Candidate> candidates;
  msg::TokenSampling greedy;
  greedy.temperature = 0.0f;
  greedy.top_logprobs = tree.topk;
  for (size_t n = tree.fed; n < tree.tokens.size(); ++n) {
    const SampledToken drawn = sample_token(rows + static_cast<int64_t>(n - tree.fed) * vocab, vocab, greedy);
    for (size_t c = 0; c < drawn.top.ids.size(); ++c)
      candidates.push_back({tree.scores[n] + drawn.top.logprobs[c], static_cast<int32_t>(n), drawn.top.ids[c]});
  }
  const size_t take = tree.next_layer_size();
  if (candidates.size() < take)
    throw Error("a draft-then-verify tree shape has a layer wider than draft_topk times the layer above");
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  // Node order within a layer follows the parents, as the shape's layer-by-layer listing wants.
  std::stable_sort(candidates.begin(), candidates.begin() + static_cast<int64_t>(take),
                   [](const Candidate& a, const Candidate& b) { return a.parent < b.parent; });
  tree.fed = tree.tokens.size();
  for (size_t c = 0; c < take; ++c) {
    tree.tokens.push_back(candidates[c].token);
    tree.parents.push_back(candidates[c].parent);
    tree.scores.push_back(candidates[c].score);
  }
}

}  // namespace

size_t GrowingTree::next_layer_size() const {
  const int32_t depth = depths[tokens.size() - 1] + 1;
  return static_cast<size_t>(std::count(depths.begin() + static_cast<int64_t>(tokens.size()), depths.end(), depth));
}

void grow_draft_trees(msg::WorkerBatch& batch, const SequenceTables& tables, int64_t vocab, const DraftLayerForward& forward,
                      std::vector<int32_t>& tokens, std::vector<int32_t>& parents) {
  std::vector<GrowingTree> trees;
  int64_t first_token = 0;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    if (batch.sequences[i].draft_topk > 0) trees.push_back(start_tree(batch, tables, i, first_token));
    first_token += batch.sequences[i].num_new_tokens;
  }
  // One draft forward per layer, over every tree that still has nodes to fill.
  for (;;) {
    std::vector<GrowingTree*> growing;
    for (GrowingTree& tree : trees)
      if (!tree.full()) growing.push_back(&tree);
    if (growing.empty()) break;
    const float* logits = forward(growing);
    int64_t row = 0;
    for (GrowingTree* tree : growing) {
      const auto rows = static_cast<int64_t>(tree->tokens.size() - tree->fed);
      grow_layer(*tree, logits + row * vocab, vocab);
      row += rows;
    }
  }
  for (const GrowingTree& tree : trees) {
    msg::WorkerSequence& s = batch.sequences[tree.sequence];
    std::copy(tree.tokens.begin(), tree.tokens.end(), batch.token_ids.begin() + tree.first_token);
    s.tree_parents = tree.parents;
    tokens.insert(tokens.end(), tree.tokens.begin(), tree.tokens.end());
    parents.insert(parents.end(), tree.parents.begin(), tree.parents.end());
  }
}

}  // namespace moe
