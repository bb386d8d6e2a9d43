#pragma once
// A ForwardBatch's integer tables on the device, packed into one array and uploaded in one copy
// per step from pinned memory (a true asynchronous copy): token ids, positions, the slot each new
// token writes, where each token's slot table starts, the tokens that need logits, the sequences'
// slot tables one after another (a draft tree's tokens each with a table of their own: the slots
// they see), which kernel attends which tokens (QueryRuns), and, with an expert limit, which tokens it confines. The pinned tables are rewritten by the next upload, so
// the model waits for each step before uploading the next (it does: forward returns results).
#include <cstdint>
#include <vector>

#include "cuda/device_array.h"
#include "cuda/kernels.h"
#include "model/forward_batch.h"

namespace moe::cuda {

class DeviceBatch {
 public:
  // Queues the copy on `stream`; the host side is kept, so the copy may finish after this returns.
  void upload(const ForwardBatch& batch, cudaStream_t stream);
  // A decode batch (one new token per sequence, each needing logits) padded to `padded` tokens for a
  // CUDA graph: padding tokens are token 0 at position 0 writing and reading only `pad_slot`, and
  // every token's row gets logits (the caller reads the first batch.num_tokens()).
  void upload_padded(const ForwardBatch& batch, int64_t padded, int32_t pad_slot, cudaStream_t stream);

  // Grows the tables to a step of max_tokens tokens whose sequences' slot tables hold `slots`
  // entries in all (as many as the pool has: more only where prefixes are shared, then grown by doubling).
  void reserve(int64_t max_tokens, int64_t slots);

  int64_t num_tokens() const { return num_tokens_; }
  int64_t num_logit_rows() const { return num_logit_rows_; }
  const int32_t* token_ids() const { return at(kTokenIds); }
  const int32_t* positions() const { return at(kPositions); }
  const int32_t* own_slots() const { return at(kOwnSlots); }  // [T]: the slot token t's K/V go to
  const int32_t* logit_tokens() const { return at(kLogitTokens); }
  AttentionTables attention_tables() const { return {at(kPositions), at(kSlotOffsets), at(kSlotTable)}; }
  // The prefill runs' query tiles and the other tokens; every token one at a time where there is no
  // tile (a decode batch, padded ones too).
  QueryRuns query_runs() const {
    if (num_tiles_ == 0) return QueryRuns::every_token(num_tokens_);
    return {at(kQueryTiles), num_tiles_, at(kSingleTokens), num_tokens_ - tiled_tokens_};
  }
  // The batch's max_tree_experts where it has tree tokens to confine, else 0.
  int expert_limit() const { return expert_limit_; }
  // [T], 1 for the tokens the expert limit confines (the tree tokens); null without a limit.
  const int32_t* limited_tokens() const { return expert_limit_ > 0 ? at(kTreeTokens) : nullptr; }

 private:
  // kQueryTiles is two entries a tile (at most one per token); the other per-token tables one a token.
  enum Table {
    kTokenIds,
    kPositions,
    kOwnSlots,
    kSlotOffsets,
    kLogitTokens,
    kQueryTiles,
    kSingleTokens,
    kSlotTable,
    kTreeTokens,
    kTables
  };
  const int32_t* at(Table table) const { return device_.data() + starts_[table]; }

  int64_t num_tokens_ = 0;
  int64_t num_logit_rows_ = 0;
  int expert_limit_ = 0;
  int64_t num_tiles_ = 0;
  int64_t tiled_tokens_ = 0;
  size_t starts_[kTables] = {};
  std::vector<int32_t> host_;
  PinnedArray<int32_t> pinned_;
  DeviceArray<int32_t> device_;
};

}  // namespace moe::cuda
