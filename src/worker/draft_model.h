#pragma once
// STANDALONE speculative decoding's draft model, held by the model worker beside the target. Its KV
// cache is indexed by the same slots the scheduler hands out for the target: the worker runs the
// draft over every batch the target runs (a shadow forward), so whatever slots hold
// the target's K/V hold the draft's for the same tokens and positions, and prefix-cache hits,
// preemption and chunked prefill need nothing of their own. Before a verify, the draft grows each
// draft-then-verify sequence's tree layer by layer.
#include <cstdint>
#include <memory>
#include <vector>

#include "model/model.h"
#include "moe/messages.h"
#include "worker/sequence_tables.h"

namespace moe {

class DraftModel {
 public:
  // A draft whose vocabulary differs from the target's is a moe::Error naming
  // --speculative-draft-model-path.
  DraftModel(std::unique_ptr<Model> model, const ModelConfig& target, int64_t kv_slots);

  // The draft's forward over the batch the target runs (no logits, no expert limit). With
  // capture_routing and an MoE draft, returns its routing of the batch's tokens ([T, its MoE layers,
  // its top_k], ids only), kept apart from the target's; otherwise no rows.
  msg::RoutingRows shadow(const ForwardBatch& batch, bool capture_routing);

  // The trees of the sequences with draft_topk > 0: their first token (the root) is given, the other
  // nodes are placeholders whose depths (tree_parents) fix the tree's shape. Each layer is filled
  // with that many tokens, the best by cumulative draft log-probability among the draft_topk most
  // probable children of every node of the layer above, one draft forward per layer. The chosen
  // tokens and parents are written into the batch (positions and slots stay: depths do not change)
  // and appended, in batch order, to tokens and parents.
  void draft_trees(msg::WorkerBatch& batch, const SequenceTables& tables, std::vector<int32_t>& tokens,
                   std::vector<int32_t>& parents);

 private:
  std::unique_ptr<Model> model_;
  KvCache kv_;
  std::vector<float> logits_;
};

}  // namespace moe
