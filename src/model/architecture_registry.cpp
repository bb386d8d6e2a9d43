#include "model/architecture.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace moe {

const Architecture& qwen3_moe_architecture();
const Architecture& mixtral_architecture();
const Architecture& qwen2_moe_architecture();
const Architecture& glm4_moe_architecture();
const Architecture& deepseek_v3_architecture();

std::vector<const Architecture*> supported_architectures() {
  return {&qwen3_moe_architecture(), &mixtral_architecture(), &qwen2_moe_architecture(), &glm4_moe_architecture(),
          &deepseek_v3_architecture()};
}

const Architecture& find_architecture(const std::string& name) {
  std::string supported;
  for (const Architecture* arch : supported_architectures()) {
    if (name == arch->name()) return *arch;
    supported += std::string(supported.empty() ? "" : ", ") + arch->name();
  }
  throw Error("unsupported architecture '" + name + "'; supported: " + supported);
}

ModelPlan model_plan(const ModelConfig& config) { return find_architecture(config.architecture).plan(config); }

std::vector<int> sparse_step_moe_layers(const nlohmann::json& config, int num_layers) {
  const int step = config.value("decoder_sparse_step", 1);
  if (step < 1) throw Error("config.json: decoder_sparse_step must be >= 1");
  std::vector<int> mlp_only;
  if (config.contains("mlp_only_layers") && config["mlp_only_layers"].is_array())
    mlp_only = config["mlp_only_layers"].get<std::vector<int>>();
  std::vector<int> layers;
  for (int l = 0; l < num_layers; ++l)
    if (std::find(mlp_only.begin(), mlp_only.end(), l) == mlp_only.end() && (l + 1) % step == 0) layers.push_back(l);
  return layers;
}

}  // namespace moe
