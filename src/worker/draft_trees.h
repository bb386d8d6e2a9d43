#pragma once
// How a drafting model (STANDALONE's draft, NEXTN's next-token-prediction layer) fills the tree shapes
// the scheduler reserved for draft-then-verify sequences: layer by layer, the best children (by
// cumulative draft log-probability) of the newest layer's nodes, one draft forward per layer over
// every tree still growing.
#include <cstdint>
#include <functional>
#include <vector>

#include "moe/messages.h"
#include "worker/sequence_tables.h"

namespace moe {

// One draft-then-verify sequence while its tree grows.
struct GrowingTree {
  size_t sequence = 0;       // in the batch
  int64_t first_token = 0;   // its root's index in the batch's token axis
  std::vector<int32_t> prefix_slots;  // the positions before the tree
  std::vector<int32_t> node_slots;    // one per node, in node order
  std::vector<int32_t> depths;        // the shape the scheduler reserved
  int32_t topk = 0;
  std::vector<int32_t> tokens, parents;
  std::vector<float> scores;  // cumulative draft log-probability; the root's is 0
  size_t fed = 0;             // nodes whose K/V the draft's cache holds

  bool full() const { return tokens.size() == depths.size(); }
  // The nodes the next layer takes: those at the depth after the last node's.
  size_t next_layer_size() const;
};

// The draft's forward over the newest layer of each growing tree (nodes fed .. tokens.size(), in
// tree order): its logits, one row per node, the trees one after the other.
using DraftLayerForward = std::function<const float*(const std::vector<GrowingTree*>& growing)>;

// The trees of the sequences with draft_topk > 0: their first token (the root) is given, the other
// nodes are placeholders whose depths (tree_parents) fix the tree's shape; their KV slots are in `tables`. Each layer is filled
// with that many tokens, the best by cumulative draft log-probability among the draft_topk most
// probable children of every node of the layer above. The chosen tokens and parents are written
// into the batch (positions and slots stay: depths do not change) and appended, in batch order, to
// tokens and parents.
void grow_draft_trees(msg::WorkerBatch& batch, const SequenceTables& tables, int64_t vocab, const DraftLayerForward& forward,
                      std::vector<int32_t>& tokens, std::vector<int32_t>& parents);

}  // namespace moe
