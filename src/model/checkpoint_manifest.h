#pragma once
// Every tensor a checkpoint of a given config holds, with its shape and how a random initialisation
// should scale it. Used to write random-weight checkpoints (benchmarks, tests).
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace moe {

struct TensorSpec {
  enum class Init { Embedding, Projection, Router, NormScale, Bias };
  std::string name;
  std::vector<int64_t> shape;
  Init init = Init::Projection;
};

std::vector<TensorSpec> checkpoint_manifest(const ModelConfig& config);

}  // namespace moe
