#pragma once
// How a batch's new tokens attend, whatever the attention: a plain sequence's new tokens together
// over its slots by position, and each token of a draft tree alone over the slots it sees (the
// positions before the tree, then its ancestors and itself: the tree attention mask as a list of
// visible slots per token). Runs come in the batch's token order.
#include <cstdint>
#include <vector>

#include "model/forward_batch.h"

namespace moe {

struct AttendingRun {
  int64_t first_token = 0;     // in the batch's token axis
  int64_t num_new = 0;         // token i sits at first_position + i and sees positions 0..first_position + i,
  int64_t first_position = 0;  // whose KV rows are at slots[position]
  const int32_t* slots = nullptr;
};

class AttendingRuns {
 public:
  explicit AttendingRuns(const ForwardBatch& batch);
  const std::vector<AttendingRun>& runs() const { return runs_; }

 private:
  std::vector<std::vector<int32_t>> tree_views_;  // what the tree tokens' runs point into
  std::vector<AttendingRun> runs_;
};

}  // namespace moe
