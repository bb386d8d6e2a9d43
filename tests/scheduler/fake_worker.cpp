#include "fake_worker.h"

#include <stdexcept>
#include <string>

#include "scheduler/kv_slot_pool.h"

namespace moe::test {

namespace {

int32_t fake_next_token(const std::vector<int32_t>& sequence, uint64_t seed, int64_t step) {
  uint64_t h = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step);
  for (int32_t token : sequence) h = (h ^ static_cast<uint64_t>(token)) * 1099511628211ull;
  return static_cast<int32_t>(1 + (h >> 17) % 997);
}

}  // namespace

FakeWorker::FakeWorker(int64_t num_slots) : slot_token_(num_slots, -1), slot_position_(num_slots, -1) {}

std::vector<int32_t> FakeWorker::run(const ScheduledBatch& batch) {
  tables_.apply(batch);
  std::vector<int32_t> token_ids = batch.token_ids;
  recent_samples_.fill(token_ids, batch.future_tokens);
  std::vector<int32_t> sampled;
  size_t row = 0;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const msg::WorkerSequence& seq = batch.sequences[i];
    const std::span<const int32_t> table = tables_.table(seq.id);
    const auto first = static_cast<int32_t>(table.size()) - seq.num_new_tokens;
    for (int32_t t = 0; t < seq.num_new_tokens; ++t, ++row) {
      const int32_t slot = table[first + t];
      if (slot == KvSlotPool::kPaddingSlot) throw std::runtime_error("a request token was written to the padding slot");
      if (batch.positions[row] != first + t) throw std::runtime_error("wrong position in batch");
      slot_token_[slot] = token_ids[row];
      slot_position_[slot] = first + t;
    }
    if (!seq.needs_logits) continue;
    std::vector<int32_t> sequence;
    for (int32_t pos = 0; pos < static_cast<int32_t>(table.size()); ++pos) {
      const int32_t slot = table[pos];
      if (slot_position_[slot] != pos)
        throw std::runtime_error("slot " + std::to_string(slot) + " does not hold position " + std::to_string(pos));
      sequence.push_back(slot_token_[slot]);
    }
    sampled.push_back(fake_next_token(sequence, seq.sampling.seed, seq.sampling.step));
  }
  recent_samples_.remember(batch.step, sampled);
  return sampled;
}

std::vector<int32_t> reference_output(const std::vector<int32_t>& prompt, uint64_t seed, int num_tokens) {
  std::vector<int32_t> sequence = prompt;
  std::vector<int32_t> output;
  for (int step = 0; step < num_tokens; ++step) {
    output.push_back(fake_next_token(sequence, seed, step));
    sequence.push_back(output.back());
  }
  return output;
}

}  // namespace moe::test
