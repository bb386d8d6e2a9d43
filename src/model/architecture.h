#pragma once
// What differs between the supported model families: the config fields each reads and its plan
// (model/model_plan.h: tensor names and layer sequence). Each family lives in its own file under
// model/architectures/; architecture_registry.cpp lists them.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/model_plan.h"

namespace moe {

class Architecture {
 public:
  virtual ~Architecture() = default;
  // The Hugging Face class name in config.json "architectures".
  virtual const char* name() const = 0;
  // Fills what is specific to this family (the common fields are already read).
  virtual void read_config(const nlohmann::json& config, ModelConfig& out) const = 0;
  // The tensors and layers of a model of this family, from a config read_config filled.
  virtual ModelPlan plan(const ModelConfig& config) const = 0;
};

// The architecture named `name`, or a moe::Error listing the supported ones.
const Architecture& find_architecture(const std::string& name);
std::vector<const Architecture*> supported_architectures();

// The plan of config's architecture.
ModelPlan model_plan(const ModelConfig& config);

// Qwen-style MoE layer selection shared by Qwen2-MoE and Qwen3-MoE: layer l is MoE unless it is in
// mlp_only_layers, and only every decoder_sparse_step-th layer ((l + 1) % step == 0) is.
std::vector<int> sparse_step_moe_layers(const nlohmann::json& config, int num_layers);

}  // namespace moe
