#pragma once
// Writes a random-weight checkpoint in the Hugging Face hub layout (config.json, sharded
// safetensors, model.safetensors.index.json) for any supported architecture; the same seed gives
// the same bytes.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "kernels/weight.h"

namespace moe {

struct RandomCheckpointOptions {
  uint64_t seed = 0;
  DType dtype = DType::BF16;
  int64_t shard_bytes = int64_t{2} << 30;
};

void write_random_checkpoint(const nlohmann::json& config, const std::string& out_dir,
                             const RandomCheckpointOptions& options);

}  // namespace moe
