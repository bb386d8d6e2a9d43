#pragma once
// The one place that chooses where a model runs: ModelOptions::device picks the CPU model
// (Model::load) or, in a build with the CUDA backend (-DMOE_CUDA=ON), the GPU model.
#include <memory>
#include <string>

#include "model/model.h"
#include "moe/engine_options.h"

namespace moe {

// A device this build lacks is a moe::Error that says how to get it.
std::unique_ptr<Model> load_model_on_device(const std::string& model_dir, const ModelOptions& options);

// The model options that the engine's flags (moe-serve's, moe-cli generate's, an embedded engine's)
// ask for: the whole model, quantized as --quantization says. A flag's unknown value is a moe::Error.
ModelOptions model_options(const EngineOptions& options);

}  // namespace moe
