#pragma once
// A checkpoint made of another one with some of its tensors replaced: how tensors a trainer
// broadcasts (a weight group's Receive, worker/weight_group_calls.cpp) become weights the model
// loads, through the same loader, conversions and checks as a checkpoint from disk.
#include <string>
#include <vector>

#include "model/random_checkpoint.h"

namespace moe {

// The file of an overlay that holds the replacing tensors.
inline constexpr const char* kOverlayTensorsFile = "trainer-weights.safetensors";

// Writes into `out_dir` (created; it must not hold a checkpoint yet) the checkpoint at `base_dir`
// with `replacing` in place of its tensors of the same names. base_dir's files are linked (each
// link to the file itself, so a base that is itself an overlay may be removed afterwards); the
// replacing tensors, and those an overlay base had replaced and `replacing` does not, go into
// kOverlayTensorsFile; model.safetensors.index.json names every tensor's file. A name base_dir
// does not hold, or a shape other than its tensor's, is a moe::Error naming the tensor.
void write_checkpoint_overlay(const std::string& base_dir, const std::vector<TensorToWrite>& replacing,
                              const std::string& out_dir);

}  // namespace moe
