#pragma once
// What differs between the supported model families: config fields and tensor names. Each family
// lives in its own file (qwen3_moe.cpp, mixtral.cpp, qwen2_moe.cpp); architecture_registry.cpp lists them.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace moe {

// Checkpoint tensor names of one decoder layer's MoE block.
struct MoeTensorNames {
  std::string router;                        // [E, H]
  std::string expert_prefix;                 // + "<e>." + gate/up/down + ".weight"
  std::string gate, up, down;                // per-expert projection names
  std::string shared_expert_prefix;          // empty when there is no shared expert
  std::string shared_expert_gate;            // [1, H] sigmoid gate of the shared expert
};

class Architecture {
 public:
  virtual ~Architecture() = default;
  // The Hugging Face class name in config.json "architectures".
  virtual const char* name() const = 0;
  // Fills what is specific to this family (the common fields are already read).
  virtual void read_config(const nlohmann::json& config, ModelConfig& out) const = 0;
  virtual MoeTensorNames moe_tensor_names(int layer) const = 0;
};

// The architecture named `name`, or a moe::Error listing the supported ones.
const Architecture& find_architecture(const std::string& name);
std::vector<const Architecture*> supported_architectures();

// Qwen-style MoE layer selection shared by Qwen2-MoE and Qwen3-MoE: layer l is MoE unless it is in
// mlp_only_layers, and only every decoder_sparse_step-th layer ((l + 1) % step == 0) is.
std::vector<int> sparse_step_moe_layers(const nlohmann::json& config, int num_layers);

}  // namespace moe
