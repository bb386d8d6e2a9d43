#include "scheduler/scheduled_batch.h"

#include <algorithm>

namespace moe {

std::span<const int32_t> ScheduledBatch::new_token_slots(size_t sequence) const {
  const BatchSequence& seq = forward.sequences.at(sequence);
  const std::span<const int32_t> all(seq.kv_slots);
  return all.last(static_cast<size_t>(seq.num_new_tokens));
}

std::vector<int32_t> ScheduledBatch::token_slots() const {
  std::vector<int32_t> slots;
  slots.reserve(static_cast<size_t>(forward.num_tokens()));
  for (size_t i = 0; i < forward.sequences.size(); ++i) {
    const std::span<const int32_t> seq_slots = new_token_slots(i);
    slots.insert(slots.end(), seq_slots.begin(), seq_slots.end());
  }
  return slots;
}

bool ScheduledBatch::captures_routing() const {
  return std::any_of(sequences.begin(), sequences.end(),
                     [](const ScheduledSequence& s) { return s.return_routed_experts; });
}

}  // namespace moe
