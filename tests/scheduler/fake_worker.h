#pragma once
// A stand-in model worker for scheduler tests. Its "KV cache" stores, per slot, the token and
// position written there; its "model" samples a hash of the whole sequence read back through the
// sequence's KV slot table (kept as the real worker keeps it: SequenceTables, changed by each batch),
// the request's seed and the step. So any wrong, stale or reused slot, any wrong
// position or seed changes the output and the test sees it against reference_output(). Future
// tokens (overlapped scheduling) come from the steps it ran, as in the real worker.
#include <cstdint>
#include <vector>

#include "scheduler/request.h"
#include "worker/recent_samples.h"
#include "worker/sequence_tables.h"

namespace moe::test {

class FakeWorker {
 public:
  explicit FakeWorker(int64_t num_slots);
  // Writes the batch's new tokens into their slots and samples every sequence that needs logits.
  // Throws if a sequence reads a slot that does not hold its token at that position.
  std::vector<int32_t> run(const ScheduledBatch& batch);

 private:
  std::vector<int32_t> slot_token_;
  std::vector<int32_t> slot_position_;
  RecentSamples recent_samples_;
  SequenceTables tables_;
};

// What the fake model generates for a prompt when nothing goes wrong.
std::vector<int32_t> reference_output(const std::vector<int32_t>& prompt, uint64_t seed, int num_tokens);

}  // namespace moe::test
