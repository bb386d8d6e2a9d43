#pragma once
// The drafter of NEXTN and EAGLE3 speculative decoding: a one-layer draft over the target's hidden
// states (model/hidden_draft_head.h: the checkpoint's next-token-prediction layer, or an EAGLE-3
// head) with a KV cache of its own, indexed by the scheduler's slots as the target's is. The head's
// entry for the token at position q is computed from that token and the target's hidden state at
// q - 1 (as the head reads it: the final-normed state for NEXTN, fc of three layers' states for
// EAGLE3), at position q - 1 (the token at position 0 has none), so it is a function of the sequence
// up to q, like the target's K/V at q: after every target forward the worker runs the head over the
// same tokens and slots (a shadow forward) with the target's hidden states of that forward, and
// prefix-cache hits, preemption, chunked prefill and freed rejected nodes need no bookkeeping. The
// target's hidden state of every slot is kept too ([slots, H]), for the first token a later forward
// feeds after it. Before a verify, the head grows each draft-then-verify sequence's tree
// (draft_trees.h), each node's own output hidden state standing in for the target's at its position.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/hidden_draft_head.h"
#include "moe/messages.h"
#include "worker/sequence_tables.h"

namespace moe {

class HiddenStateDrafter {
 public:
  // `target_vocab`: the width of the head's logits rows.
  HiddenStateDrafter(HiddenDraftHead& head, int64_t target_vocab, int64_t kv_slots);

  // After the target's forward over `batch`, whose hidden states as the head reads them are
  // target_hidden [T, H]. With capture_routing (an MoE head only), returns the head's routing of each
  // token of the batch ([T, 1, top_k], ids only; the token at position 0, which the head does not see,
  // has a row of -1).
  msg::RoutingRows shadow(const ForwardBatch& batch, const std::vector<float>& target_hidden, bool capture_routing);

  // Fills the tree shapes of the batch's draft-then-verify sequences (grow_draft_trees), one head
  // forward per tree layer.
  void draft_trees(msg::WorkerBatch& batch, const SequenceTables& tables, std::vector<int32_t>& tokens,
                   std::vector<int32_t>& parents);

 private:
  const float* stored_hidden(int32_t slot) const { return slot_hidden_.data() + static_cast<int64_t>(slot) * hidden_; }

  HiddenDraftHead& head_;
  int64_t hidden_, vocab_;
  int top_k_;
  KvCache kv_;
  std::vector<float> slot_hidden_;  // [slots, H]: the target's hidden state at each slot, as the head reads it
  std::vector<float> prev_, out_, logits_;  // scratch kept from step to step
  std::map<size_t, std::vector<float>> node_hidden_;  // while trees grow: per sequence, [nodes, H]
};

}  // namespace moe
