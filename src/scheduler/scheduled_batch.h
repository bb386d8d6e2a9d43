#pragma once
// What the scheduler hands the model worker for one step: the ForwardBatch, plus for each of its
// sequences who it belongs to and how to sample it. The worker needs nothing else, so it keeps no
// per-request state beyond KV contents.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/forward_batch.h"
#include "sampling/sampling_params.h"

namespace moe {

// The per-sequence data that travels with forward.sequences[i].
struct ScheduledSequence {
  uint64_t uid = 0;     // the scheduler's request handle
  std::string rid;
  int index = 0;        // completion index within an n > 1 request
  SamplingParams sampling;  // seed already fixed
  int64_t sample_step = 0;  // the output index of the token sampled here: the RNG's step
  bool return_routed_experts = false;
};

struct ScheduledBatch {
  uint64_t step_id = 0;  // the scheduler checks that results come back for the batch it issued
  ForwardBatch forward;
  std::vector<ScheduledSequence> sequences;  // parallel to forward.sequences

  // KV slots of the tokens sequence i feeds in this step (the capture hook: a routed-experts row
  // computed for one of them belongs at that slot of the host cache).
  std::span<const int32_t> new_token_slots(size_t sequence) const;
  // The KV slot of every row of the flattened token axis, in forward order.
  std::vector<int32_t> token_slots() const;
  // Whether any sequence asked for its routed experts (a batch captures when one does).
  bool captures_routing() const;
};

}  // namespace moe
