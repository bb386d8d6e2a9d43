#pragma once
// One forward pass over several sequences, flattened into one token axis. Each sequence adds any
// number of new tokens (a prefill chunk, or one decode token) on top of what its KV slots already hold.
#include <cstdint>
#include <vector>

namespace moe {

struct BatchSequence {
  int32_t num_new_tokens = 0;      // this sequence's tokens in the flattened axis, in order
  std::vector<int32_t> kv_slots;   // KV slot of every position 0 .. prefix + num_new_tokens - 1
  bool needs_logits = false;       // produce logits for its last new token (it will be sampled)
};

struct ForwardBatch {
  std::vector<int32_t> token_ids;  // [T]
  std::vector<int32_t> positions;  // [T], position of each token in its own sequence
  std::vector<BatchSequence> sequences;

  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  int64_t num_logit_rows() const;
  // The token index (in the flattened axis) of each logits row: the last new token of every
  // sequence that needs_logits, in batch order.
  std::vector<int64_t> logit_tokens() const;
  // Appends one sequence's new tokens; positions run on from kv_slots.size() - tokens.size().
  void add_sequence(const std::vector<int32_t>& tokens, std::vector<int32_t> kv_slots, bool needs_logits);
};

// A malformed batch would read or write outside the model's tables or KV cache: every model refuses
// it (moe::Error) before touching anything. Token ids must lie in [0, vocab_size), positions run on
// within each sequence, and every KV slot lies in [0, num_slots).
void validate_forward_batch(const ForwardBatch& batch, int64_t vocab_size, int64_t num_slots);

}  // namespace moe
