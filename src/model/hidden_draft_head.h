#pragma once
// A one-layer draft that reads the target's hidden states beside the tokens: NEXTN's
// next-token-prediction layer (nextn_layer.h) and an EAGLE-3 head (eagle3_head.h). The worker's
// HiddenStateDrafter (worker/hidden_state_drafter.h) runs either: the token at position q with the
// hidden state of position q - 1, at position q - 1, and when drafts are chained a node with its
// parent's own output hidden state.
#include <cstdint>
#include <vector>

#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "moe/routing_capture.h"

namespace moe {

class HiddenDraftHead {
 public:
  virtual ~HiddenDraftHead() = default;
  // The width of the hidden states it reads and writes.
  virtual int64_t hidden_size() const = 0;
  // The top_k of its MoE block, whose routing forward reports as MoE layer 0; 0 for a dense head.
  virtual int routing_top_k() const = 0;
  // Its own KV cache: one layer's rows for num_slots slots.
  virtual KvCache make_kv_cache(int64_t num_slots) const = 0;
  // Token t of `batch` follows the position whose hidden state is prev_hidden[t] ([T, hidden_size()])
  // and runs at that position. Writes every token's output hidden state (what a draft chained after it
  // reads) into hidden [T, hidden_size()], and logits over the target's vocabulary for the batch's
  // logit rows.
  virtual void forward(const ForwardBatch& batch, const float* prev_hidden, KvCache& kv, std::vector<float>& hidden,
                       std::vector<float>& logits, RoutingCapture* capture) = 0;
};

}  // namespace moe
