#pragma once
// One forward pass over several sequences, flattened into one token axis. Each sequence adds any
// number of new tokens (a prefill chunk, one decode token, or a speculative draft tree) on top of
// what its KV slots already hold.
#include <cstdint>
#include <span>
#include <vector>

namespace moe {

struct BatchSequence {
  int32_t num_new_tokens = 0;      // this sequence's tokens in the flattened axis, in order
  // KV slot of every position 0 .. prefix + num_new_tokens - 1; with a tree, of every position
  // before the tree, then of every tree node in node order. A view: of the worker's table of the
  // sequence (SequenceTables), or of slots the batch keeps (ForwardBatch::keep_slots).
  std::span<const int32_t> kv_slots;
  bool needs_logits = false;       // produce logits for its last new token (every tree node's, with a tree)
  // Empty: the new tokens follow each other. Otherwise a tree over the last tree_parents.size()
  // entries of kv_slots (speculative verify): node i's parent is tree_parents[i] < i, or -1 for a
  // node that follows the last position before the tree. A node sees the positions before the tree
  // and its own ancestors only, at position (positions before the tree) + its depth. The last
  // num_new_tokens nodes are this step's tokens; earlier nodes already hold their K/V.
  std::vector<int32_t> tree_parents;
  // Prompt logprobs: logits also for this many new tokens before the last (before the end, when
  // the sequence does not need_logits). Never with a tree.
  int32_t prompt_logit_rows = 0;

  bool is_tree() const { return !tree_parents.empty(); }
  // Positions before the tree (all of kv_slots but the new tokens, without a tree).
  int64_t prefix_len() const;
  // The KV slot new token i writes.
  int32_t new_token_slot(int32_t i) const { return kv_slots[kv_slots.size() - num_new_tokens + i]; }
  // Logits rows this sequence produces, for its last new tokens: its prompt logit rows, then 1 when
  // it needs_logits; or one per new token of a tree.
  int32_t num_logit_rows() const {
    return is_tree() ? (needs_logits ? num_new_tokens : 0) : prompt_logit_rows + (needs_logits ? 1 : 0);
  }
  // The KV slots new token i attends to, in position order: the positions before the tree, then
  // its ancestors and itself (every earlier position, without a tree).
  std::vector<int32_t> visible_slots(int32_t i) const;
};

// Move-only: its sequences may view slot lists it keeps itself, which a copy would not own.
struct ForwardBatch {
  ForwardBatch() = default;
  ForwardBatch(ForwardBatch&&) = default;
  ForwardBatch& operator=(ForwardBatch&&) = default;
  ForwardBatch(const ForwardBatch&) = delete;
  ForwardBatch& operator=(const ForwardBatch&) = delete;

  std::vector<int32_t> token_ids;  // [T]
  std::vector<int32_t> positions;  // [T], position of each token in its own sequence
  std::vector<BatchSequence> sequences;
  // Speculative verify with expert limiting: per MoE layer, the tokens of tree sequences together
  // route only to the max_tree_experts experts their router probabilities favour most; 0 = off.
  // Tokens of other sequences always route freely.
  int32_t max_tree_experts = 0;

  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  int64_t num_logit_rows() const;
  // The token index (in the flattened axis) of each logits row: the last num_logit_rows() new
  // tokens of every sequence, in batch order.
  std::vector<int64_t> logit_tokens() const;
  // Whether token t belongs to a tree sequence, for every token (empty when no sequence is a tree).
  std::vector<uint8_t> tree_token_mask() const;
  // Keeps `slots` for as long as the batch lives (moves included) and returns a view of them, for a
  // sequence built here rather than viewing a worker's table.
  std::span<const int32_t> keep_slots(std::vector<int32_t> slots);
  // Appends one sequence's new tokens; positions run on from kv_slots.size() - tokens.size().
  void add_sequence(const std::vector<int32_t>& tokens, std::vector<int32_t> kv_slots, bool needs_logits);
  // Appends a tree whose nodes are all new (see BatchSequence::tree_parents): kv_slots holds the
  // positions before the tree, then one slot per node.
  void add_tree_sequence(const std::vector<int32_t>& tokens, std::vector<int32_t> kv_slots,
                         std::vector<int32_t> parents, bool needs_logits);

 private:
  // Each list's heap buffer stays where it is when this vector grows or the batch moves.
  std::vector<std::vector<int32_t>> kept_slots_;
};

// Depth of every node of a tree given by its parents (-1 = a node at depth 0); a parent that is
// not an earlier node is a moe::Error.
std::vector<int32_t> tree_depths(const std::vector<int32_t>& parents);

// A malformed batch would read or write outside the model's tables or KV cache: every model refuses
// it (moe::Error) before touching anything. Token ids must lie in [0, vocab_size), positions run on
// within each sequence (follow the tree's depths in a tree), and every KV slot lies in [0, num_slots).
void validate_forward_batch(const ForwardBatch& batch, int64_t vocab_size, int64_t num_slots);

}  // namespace moe
