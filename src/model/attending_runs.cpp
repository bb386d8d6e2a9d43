#include "model/attending_runs.h"

#include <cstddef>

namespace moe {

AttendingRuns::AttendingRuns(const ForwardBatch& batch) {
  for (const BatchSequence& seq : batch.sequences)
    for (int32_t i = 0; seq.is_tree() && i < seq.num_new_tokens; ++i) tree_views_.push_back(seq.visible_slots(i));
  size_t view = 0;
  int64_t t = 0;
  for (const BatchSequence& seq : batch.sequences) {
    if (seq.num_new_tokens == 0) continue;
    if (!seq.is_tree()) {
      runs_.push_back({t, seq.num_new_tokens, batch.positions[t], seq.kv_slots.data()});
      t += seq.num_new_tokens;
      continue;
    }
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t) {
      const std::vector<int32_t>& visible = tree_views_[view++];
      runs_.push_back({t, 1, static_cast<int64_t>(visible.size()) - 1, visible.data()});
    }
  }
}

}  // namespace moe
