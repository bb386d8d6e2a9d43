#pragma once
// The one place that chooses where a model runs: ModelOptions::device picks the CPU model
// (Model::load) or, in a build with the CUDA backend (-DMOE_CUDA=ON), the GPU model.
#include <memory>
#include <string>

#include "model/model.h"

namespace moe {

// A device this build lacks is a moe::Error that says how to get it.
std::unique_ptr<Model> load_model_on_device(const std::string& model_dir, const ModelOptions& options);

}  // namespace moe
