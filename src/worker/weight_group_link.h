#pragma once
// A weight group this worker has joined (ModelWorker::weight_group_call): the trainer's tensors
// arrive through it. A build with NCCL (net/nccl/) registers how to join one at start; elsewhere
// none is registered and the worker answers that NCCL weight groups need it.
#include <memory>
#include <vector>

#include "model/random_checkpoint.h"
#include "moe/messages.h"

namespace moe {

class WeightGroupLink {
 public:
  virtual ~WeightGroupLink() = default;
  // The Receive call's tensors, one broadcast each from rank 0 in the order of `names`, copied to the
  // host; a moe::Error says what failed (the group is then of no further use: leave it).
  virtual std::vector<TensorToWrite> receive(const msg::WeightGroupCall& call) = 0;
};

// Joins the group a Join call names as its rank_offset, on the current CUDA device; a moe::Error
// says why not.
using WeightGroupJoiner = std::unique_ptr<WeightGroupLink> (*)(const msg::WeightGroupCall& call);
void register_weight_group_joiner(WeightGroupJoiner joiner);
// The joiner registered, or null.
WeightGroupJoiner weight_group_joiner();

}  // namespace moe
