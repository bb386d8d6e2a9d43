#include "worker/hidden_state_drafter.h"

#include <algorithm>

#include "worker/draft_trees.h"
#include "worker/rows_collector.h"

namespace moe {

HiddenStateDrafter::HiddenStateDrafter(HiddenDraftHead& head, int64_t target_vocab, int64_t kv_slots)
    : head_(head),
      hidden_(head.hidden_size()),
      vocab_(target_vocab),
      top_k_(head.routing_top_k()),
      kv_(head.make_kv_cache(kv_slots)),
      slot_hidden_(static_cast<size_t>(kv_slots * head.hidden_size())) {}

msg::RoutingRows HiddenStateDrafter::shadow(const ForwardBatch& batch, const std::vector<float>& target_hidden,
                                      bool capture_routing) {
  const int64_t H = hidden_;
  ForwardBatch shifted;
  std::vector<int64_t> fed;  // per token of `shifted`, its index in batch's token axis
  prev_.clear();
  int64_t t = 0;
  for (const BatchSequence& seq : batch.sequences) {
    const int64_t prefix = seq.prefix_len();
    const int64_t first_node = seq.is_tree() ? static_cast<int64_t>(seq.tree_parents.size()) - seq.num_new_tokens : 0;
    // Position 0's slot holds no entry of the head: the positions run one lower.
    BatchSequence out{0, seq.kv_slots.subspan(1), false, seq.tree_parents, 0};
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t) {
      if (batch.positions[t] == 0) continue;  // the first prompt token follows nothing
      // The target's hidden state at the position before: of this forward, or kept by slot.
      const float* prev = nullptr;
      if (!seq.is_tree()) {
        prev = i > 0 ? target_hidden.data() + (t - 1) * H : stored_hidden(seq.kv_slots[prefix - 1]);
      } else {
        const int32_t parent = seq.tree_parents[first_node + i];
        prev = parent < 0            ? stored_hidden(seq.kv_slots[prefix - 1])
               : parent >= first_node ? target_hidden.data() + (t - i + parent - first_node) * H
                                      : stored_hidden(seq.kv_slots[prefix + parent]);
      }
      prev_.insert(prev_.end(), prev, prev + H);
      shifted.token_ids.push_back(batch.token_ids[t]);
      shifted.positions.push_back(batch.positions[t] - 1);
      fed.push_back(t);
      ++out.num_new_tokens;
    }
    if (out.num_new_tokens > 0) shifted.sequences.push_back(std::move(out));
  }
  std::optional<RowsCollector> rows;
  if (capture_routing && top_k_ > 0) rows.emplace(shifted.num_tokens(), 1, top_k_);
  if (shifted.num_tokens() > 0)
    head_.forward(shifted, prev_.data(), kv_, out_, logits_, rows ? &*rows : nullptr);
  // Every token's hidden state, by its slot, for what a later forward feeds after it.
  t = 0;
  for (const BatchSequence& seq : batch.sequences)
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t)
      std::copy_n(target_hidden.data() + t * H, H, slot_hidden_.data() + int64_t{seq.new_token_slot(i)} * H);
  if (!rows) return {};
  // One row per token of the batch: the first prompt token's stays -1.
  msg::RoutingRows shifted_rows = rows->take();
  msg::RoutingRows all{1, top_k_, std::vector<int16_t>(static_cast<size_t>(batch.num_tokens() * top_k_), -1), {}};
  for (size_t r = 0; r < fed.size(); ++r)
    std::copy_n(shifted_rows.expert_ids.begin() + static_cast<int64_t>(r) * top_k_, top_k_,
                all.expert_ids.begin() + fed[r] * top_k_);
  return all;
}

void HiddenStateDrafter::draft_trees(msg::WorkerBatch& batch, const SequenceTables& tables, std::vector<int32_t>& tokens,
                               std::vector<int32_t>& parents) {
  const int64_t H = hidden_;
  node_hidden_.clear();
  grow_draft_trees(
      batch, tables, vocab_,
      [&](const std::vector<GrowingTree*>& growing) {
        ForwardBatch forward;
        prev_.clear();
        for (const GrowingTree* tree : growing) {
          const std::vector<float>& nodes = node_hidden_[tree->sequence];
          // A root follows at least one prompt token: the prefix is never empty.
          const auto prefix = static_cast<int32_t>(tree->prefix_slots.size());
          for (size_t n = tree->fed; n < tree->tokens.size(); ++n) {
            forward.token_ids.push_back(tree->tokens[n]);
            forward.positions.push_back(prefix - 1 + tree->depths[n]);
            // The root follows the target's last position; a draft follows its parent, whose own
            // output stands in for the target's hidden state there.
            const int32_t parent = tree->parents[n];
            const float* prev = parent < 0 ? stored_hidden(tree->prefix_slots.back()) : nodes.data() + parent * H;
            prev_.insert(prev_.end(), prev, prev + H);
          }
          std::vector<int32_t> slots(tree->prefix_slots.begin() + 1, tree->prefix_slots.end());
          slots.insert(slots.end(), tree->node_slots.begin(),
                       tree->node_slots.begin() + static_cast<int64_t>(tree->tokens.size()));
          forward.sequences.push_back(
              {static_cast<int32_t>(tree->tokens.size() - tree->fed), forward.keep_slots(std::move(slots)), true,
               tree->parents, 0});
        }
        head_.forward(forward, prev_.data(), kv_, out_, logits_, nullptr);
        int64_t row = 0;
        for (const GrowingTree* tree : growing) {
          const auto count = static_cast<int64_t>(tree->tokens.size() - tree->fed);
          std::vector<float>& nodes = node_hidden_[tree->sequence];
          nodes.insert(nodes.end(), out_.begin() + row * H, out_.begin() + (row + count) * H);
          row += count;
        }
        return logits_.data();
      },
      tokens, parents);
}

}  // namespace moe
