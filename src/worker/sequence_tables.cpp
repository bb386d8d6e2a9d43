#include "worker/sequence_tables.h"

#include <string>
#include <unordered_set>

#include "common/error.h"

namespace moe {

void SequenceTables::apply(const msg::WorkerBatch& batch) {
  // A step of another scheduler finds no table: its sequences all start anew.
  const bool new_scheduler = batch.scheduler_instance != scheduler_instance_;
  const std::unordered_set<uint64_t> ended(batch.ended_sequences.begin(), batch.ended_sequences.end());
  std::unordered_set<uint64_t> seen;
  for (const msg::WorkerSequence& s : batch.sequences) {
    const std::string name = "step " + std::to_string(batch.step) + ": sequence " + std::to_string(s.id);
    if (!seen.insert(s.id).second) throw Error(name + " appears twice");
    if (s.kept_slots < 0) throw Error(name + " keeps a negative number of KV slots");
    if (s.kept_slots == 0) continue;
    const auto it = new_scheduler ? tables_.end() : tables_.find(s.id);
    if (it == tables_.end() || ended.count(s.id))
      throw Error(name + " is not known to this worker (it restarted, or missed a step): its KV slot table is lost");
    if (static_cast<size_t>(s.kept_slots) > it->second.size())
      throw Error(name + " keeps " + std::to_string(s.kept_slots) + " KV slots of a table of " +
                  std::to_string(it->second.size()));
  }
  if (new_scheduler) {
    tables_.clear();
    scheduler_instance_ = batch.scheduler_instance;
  }
  for (uint64_t id : batch.ended_sequences) tables_.erase(id);
  for (const msg::WorkerSequence& s : batch.sequences) {
    std::vector<int32_t>& table = tables_[s.id];
    table.resize(static_cast<size_t>(s.kept_slots));
    table.insert(table.end(), s.new_slots.begin(), s.new_slots.end());
  }
}

std::span<const int32_t> SequenceTables::table(uint64_t id) const {
  const auto it = tables_.find(id);
  if (it == tables_.end()) throw Error("sequence " + std::to_string(id) + " has no KV slot table on this worker");
  return it->second;
}

}  // namespace moe
