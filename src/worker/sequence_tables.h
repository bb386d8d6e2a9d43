#pragma once
// The KV slot table of every live sequence, held by the worker where it is used: each step's
// WorkerBatch says only how each table changed (the entries that stay, the slots appended, the
// sequences that ended), so a sequence's slots cross the wire once, not every step. Pipeline stages
// and tensor/expert-parallel ranks each hold their own copy, changed by the same steps.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "moe/messages.h"

namespace moe {

class SequenceTables {
 public:
  // Applies `batch`'s changes: drops every table when another scheduler than the last planned it
  // (the front restarted: its predecessor's sequences will never be ended) and the ended sequences'
  // tables, then for each sequence keeps the
  // first kept_slots entries of its table (none: a new table) and appends new_slots. A sequence whose
  // kept_slots this worker does not hold (a sequence it never saw: it restarted, or a step was lost)
  // or that appears twice is a moe::Error naming it, and then nothing changes: the worker must fail
  // the step rather than compute over a wrong table.
  void apply(const msg::WorkerBatch& batch);
  // The table of sequence `id` (a view, valid until the next apply); a moe::Error when not held.
  std::span<const int32_t> table(uint64_t id) const;
  size_t size() const { return tables_.size(); }

 private:
  std::unordered_map<uint64_t, std::vector<int32_t>> tables_;
  uint64_t scheduler_instance_ = 0;  // the scheduler whose steps made the tables
};

}  // namespace moe
