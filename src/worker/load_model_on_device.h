#pragma once
// The one place that chooses where a model runs: ModelOptions::device picks the CPU model
// (Model::load) or the GPU model of the CUDA backend, which only programs that link moe_cuda have
// (a build with -DMOE_CUDA=ON: moe-serve, moe-cli, the CUDA tests; the package's moe::engine_cuda).
#include <memory>
#include <string>

#include "model/model.h"
#include "moe/engine_options.h"

namespace moe {

// A device this program lacks is a moe::Error that says how to get it.
std::unique_ptr<Model> load_model_on_device(const std::string& model_dir, const ModelOptions& options);

// How --device cuda loads a model; the CUDA backend registers it at start when linked in.
using CudaModelLoader = std::unique_ptr<Model> (*)(const std::string& model_dir, const ModelOptions& options);
void register_cuda_model_loader(CudaModelLoader loader);

// The model options that the engine's flags (moe-serve's, moe-cli generate's, an embedded engine's)
// ask for: the whole model, quantized as --quantization says. A flag's unknown value is a moe::Error.
ModelOptions model_options(const EngineOptions& options);

}  // namespace moe
