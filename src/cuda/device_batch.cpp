#include "cuda/device_batch.h"

#include <algorithm>
#include <numeric>

namespace moe::cuda {
namespace {

// Sends the new tokens of `seq` (tokens first .. first + num_new_tokens - 1 of the step) to the
// tiled attention, in tiles of at most kQueryTile, where they are a plain run of at least
// kMinTiledRun; else each to the per-token attention.
void add_query_runs(const BatchSequence& seq, int32_t first, std::vector<int32_t>& tiles,
                    std::vector<int32_t>& single_tokens) {
  const int32_t n = seq.num_new_tokens;
  if (seq.is_tree() || n < kMinTiledRun) {
    for (int32_t i = 0; i < n; ++i) single_tokens.push_back(first + i);
    return;
  }
  for (int32_t i = 0; i < n; i += kQueryTile) {
    tiles.push_back(first + i);
    tiles.push_back(std::min(kQueryTile, n - i));
  }
}

}  // namespace

void DeviceBatch::reserve(int64_t max_tokens, int64_t slots) {
  // Every per-token table (kTables - 1 of them, the slot table aside; the query tiles take two entries
  // a tile, and a tile has at least kMinTiledRun > 2 tokens) and a padding slot.
  const auto size = static_cast<size_t>((kTables - 1) * max_tokens + slots + 1);
  device_.reserve(size);
  pinned_.reserve(size);
}

void DeviceBatch::upload(const ForwardBatch& batch, cudaStream_t stream) {
  upload_padded(batch, batch.num_tokens(), 0, stream);
}

void DeviceBatch::upload_padded(const ForwardBatch& batch, int64_t padded, int32_t pad_slot, cudaStream_t stream) {
  const int64_t real = batch.num_tokens();
  const bool padding = padded > real;
  std::vector<int32_t> token_ids(batch.token_ids), positions(batch.positions), own_slots, slot_offsets, slot_table;
  std::vector<int64_t> logit_tokens = batch.logit_tokens();
  std::vector<int32_t> query_tiles, single_tokens;
  int32_t first_token = 0;
  for (const BatchSequence& seq : batch.sequences) {
    add_query_runs(seq, first_token, query_tiles, single_tokens);
    first_token += seq.num_new_tokens;
    const auto offset = static_cast<int32_t>(slot_table.size());
    if (!seq.is_tree()) slot_table.insert(slot_table.end(), seq.kv_slots.begin(), seq.kv_slots.end());
    for (int32_t i = 0; i < seq.num_new_tokens; ++i) {
      own_slots.push_back(seq.new_token_slot(i));
      if (!seq.is_tree()) {
        slot_offsets.push_back(offset);
        continue;
      }
      // The tree attention mask: a tree token reads a table of its own, the positions before the
      // tree then its ancestors and itself, one entry per position 0 .. its own (prefix + depth),
      // so the attention kernel reads it as it reads any sequence's slots.
      slot_offsets.push_back(static_cast<int32_t>(slot_table.size()));
      const std::vector<int32_t> visible = seq.visible_slots(i);
      slot_table.insert(slot_table.end(), visible.begin(), visible.end());
    }
  }
  // Marks the tree tokens whose routing the expert limit confines (none without a limit).
  expert_limit_ = 0;
  std::vector<uint8_t> limited;
  if (batch.max_tree_experts > 0) limited = batch.tree_token_mask();
  if (!limited.empty()) expert_limit_ = batch.max_tree_experts;
  num_tiles_ = static_cast<int64_t>(query_tiles.size() / 2);
  tiled_tokens_ = batch.num_tokens() - static_cast<int64_t>(single_tokens.size());
  if (padding) {
    for (auto t = static_cast<int32_t>(real); t < padded; ++t) single_tokens.push_back(t);
    const auto pad_offset = static_cast<int32_t>(slot_table.size());
    slot_table.push_back(pad_slot);
    token_ids.resize(static_cast<size_t>(padded), 0);
    positions.resize(static_cast<size_t>(padded), 0);
    own_slots.resize(static_cast<size_t>(padded), pad_slot);
    slot_offsets.resize(static_cast<size_t>(padded), pad_offset);
    logit_tokens.resize(static_cast<size_t>(padded));
    std::iota(logit_tokens.begin(), logit_tokens.end(), int64_t{0});
  }
  num_tokens_ = padded;
  num_logit_rows_ = static_cast<int64_t>(logit_tokens.size());

  host_.clear();
  auto append = [&](Table table, const auto& values) {
    starts_[table] = host_.size();
    for (auto v : values) host_.push_back(static_cast<int32_t>(v));
  };
  append(kTokenIds, token_ids);
  append(kPositions, positions);
  append(kOwnSlots, own_slots);
  append(kSlotOffsets, slot_offsets);
  append(kLogitTokens, logit_tokens);
  append(kQueryTiles, query_tiles);
  append(kSingleTokens, single_tokens);
  append(kSlotTable, slot_table);
  append(kTreeTokens, limited);
  // Grown by doubling: the slot tables lengthen every decode step, and each growth moves the
  // buffer, which retires the CUDA graphs that read it.
  if (host_.size() > device_.size()) device_.reserve(std::max(host_.size(), 2 * device_.size()));
  if (host_.size() > pinned_.size()) pinned_.reserve(device_.size());
  std::copy(host_.begin(), host_.end(), pinned_.data());
  check(cudaMemcpyAsync(device_.data(), pinned_.data(), host_.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync (batch tables)");
}

}  // namespace moe::cuda
