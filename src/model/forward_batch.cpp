#include "model/forward_batch.h"

#include <string>

#include "common/error.h"

namespace moe {

int64_t BatchSequence::prefix_len() const {
  return static_cast<int64_t>(kv_slots.size()) - (is_tree() ? static_cast<int64_t>(tree_parents.size()) : num_new_tokens);
}

std::vector<int32_t> BatchSequence::visible_slots(int32_t i) const {
  const int64_t prefix = prefix_len();
  if (!is_tree()) return {kv_slots.begin(), kv_slots.begin() + prefix + i + 1};
  std::vector<int32_t> chain;  // the node and its ancestors, deepest first
  for (int32_t node = static_cast<int32_t>(tree_parents.size()) - num_new_tokens + i; node >= 0;
       node = tree_parents[node])
    chain.push_back(kv_slots[prefix + node]);
  std::vector<int32_t> slots(kv_slots.begin(), kv_slots.begin() + prefix);
  slots.insert(slots.end(), chain.rbegin(), chain.rend());
  return slots;
}

int64_t ForwardBatch::num_logit_rows() const {
  int64_t rows = 0;
  for (const auto& s : sequences) rows += s.num_logit_rows();
  return rows;
}

std::vector<int64_t> ForwardBatch::logit_tokens() const {
  std::vector<int64_t> tokens;
  int64_t t = 0;
  for (const BatchSequence& seq : sequences) {
    t += seq.num_new_tokens;
    for (int32_t r = seq.num_logit_rows(); r > 0; --r) tokens.push_back(t - r);
  }
  return tokens;
}

std::vector<uint8_t> ForwardBatch::tree_token_mask() const {
  std::vector<uint8_t> mask;
  for (const BatchSequence& seq : sequences) {
    if (seq.is_tree() && mask.empty()) mask.resize(token_ids.size(), 0);
  }
  if (mask.empty()) return mask;
  int64_t t = 0;
  for (const BatchSequence& seq : sequences)
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t) mask[t] = seq.is_tree() ? 1 : 0;
  return mask;
}

std::span<const int32_t> ForwardBatch::keep_slots(std::vector<int32_t> slots) {
  kept_slots_.push_back(std::move(slots));
  return kept_slots_.back();
}

void ForwardBatch::add_sequence(const std::vector<int32_t>& tokens, std::vector<int32_t> kv_slots,
                                bool needs_logits) {
  if (tokens.empty() || kv_slots.size() < tokens.size())
    throw Error("a batch sequence needs at least one new token and a KV slot for every position");
  const int32_t first = static_cast<int32_t>(kv_slots.size() - tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_ids.push_back(tokens[i]);
    positions.push_back(first + static_cast<int32_t>(i));
  }
  sequences.push_back({static_cast<int32_t>(tokens.size()), keep_slots(std::move(kv_slots)), needs_logits, {}, 0});
}

void ForwardBatch::add_tree_sequence(const std::vector<int32_t>& tokens, std::vector<int32_t> kv_slots,
                                     std::vector<int32_t> parents, bool needs_logits) {
  if (tokens.empty() || parents.size() != tokens.size() || kv_slots.size() < tokens.size())
    throw Error("a tree sequence needs a parent and a KV slot for every node");
  const auto prefix = static_cast<int32_t>(kv_slots.size() - tokens.size());
  const std::vector<int32_t> depths = tree_depths(parents);
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_ids.push_back(tokens[i]);
    positions.push_back(prefix + depths[i]);
  }
  sequences.push_back(
      {static_cast<int32_t>(tokens.size()), keep_slots(std::move(kv_slots)), needs_logits, std::move(parents), 0});
}

std::vector<int32_t> tree_depths(const std::vector<int32_t>& parents) {
  std::vector<int32_t> depths(parents.size());
  for (size_t i = 0; i < parents.size(); ++i) {
    const int32_t p = parents[i];
    if (p < -1 || p >= static_cast<int32_t>(i))
      throw Error("forward batch: tree node " + std::to_string(i) + " has parent " + std::to_string(p) +
                  ", which is not an earlier node");
    depths[i] = p < 0 ? 0 : depths[p] + 1;
  }
  return depths;
}

void validate_forward_batch(const ForwardBatch& batch, int64_t vocab_size, int64_t num_slots) {
  if (batch.positions.size() != batch.token_ids.size()) throw Error("forward batch: positions and tokens differ");
  if (batch.max_tree_experts < 0) throw Error("forward batch: max_tree_experts is negative");
  int64_t t = 0;
  for (const BatchSequence& seq : batch.sequences) {
    const int32_t rows_wanted = seq.prompt_logit_rows + (seq.needs_logits ? 1 : 0);
    if (seq.prompt_logit_rows < 0 || (seq.prompt_logit_rows > 0 && (seq.is_tree() || rows_wanted > seq.num_new_tokens)))
      throw Error("forward batch: " + std::to_string(seq.prompt_logit_rows) +
                  " prompt logit rows for a sequence of " + std::to_string(seq.num_new_tokens) + " new tokens");
    std::vector<int32_t> depths;
    if (seq.is_tree()) {
      depths = tree_depths(seq.tree_parents);
      if (seq.tree_parents.size() > seq.kv_slots.size() || seq.num_new_tokens > static_cast<int64_t>(depths.size()))
        throw Error("forward batch: a tree has more nodes than KV slots or fewer than its new tokens");
    }
    const int64_t prefix = seq.prefix_len();
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t) {
      if (t >= batch.num_tokens()) throw Error("forward batch: sequences hold more tokens than the batch");
      const int32_t id = batch.token_ids[t], pos = batch.positions[t];
      if (id < 0 || id >= vocab_size) throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
      const bool runs_on = seq.is_tree() ? pos == prefix + depths[depths.size() - seq.num_new_tokens + i]
                                         : pos == prefix + i;
      if (pos < 0 || pos >= static_cast<int64_t>(seq.kv_slots.size()) || !runs_on)
        throw Error("forward batch: bad position " + std::to_string(pos));
    }
    for (int32_t slot : seq.kv_slots)
      if (slot < 0 || slot >= num_slots) throw Error("forward batch: KV slot " + std::to_string(slot) + " out of range");
  }
  if (t != batch.num_tokens()) throw Error("forward batch: tokens not covered by any sequence");
}

}  // namespace moe
