#include "model/architectures/deepseek_style.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "model/architectures/llama_style.h"

namespace moe::deepseek_style {
namespace {

void require_value(const nlohmann::json& config, const char* key, const std::string& supported) {
  const std::string value = config.value(key, supported);
  if (value != supported)
    throw Error(std::string("config.json: unsupported ") + key + " '" + value + "'; supported: " + supported);
}

}  // namespace

void read_moe_config(const nlohmann::json& config, ModelConfig& out) {
  require_value(config, "scoring_func", "sigmoid");
  require_value(config, "topk_method", "noaux_tc");
  out.routing = RoutingKind::SigmoidGrouped;
  out.n_group = config.value("n_group", 1);
  out.topk_group = config.value("topk_group", 1);
  out.norm_topk_prob = config.value("norm_topk_prob", true);
  out.routed_scaling_factor = config.value("routed_scaling_factor", 1.0);
  const int64_t shared_experts = config.value("n_shared_experts", int64_t{0});
  if (shared_experts < 0) throw Error("config.json: n_shared_experts must be >= 0");
  out.shared_expert_intermediate_size = out.moe_intermediate_size * shared_experts;
  if (!config.contains("first_k_dense_replace"))
    throw Error("config.json: missing required field 'first_k_dense_replace'");
  const int first_moe_layer = config["first_k_dense_replace"].get<int>();
  out.moe_layer_ids.clear();
  for (int l = std::max(first_moe_layer, 0); l < out.num_hidden_layers; ++l) out.moe_layer_ids.push_back(l);
  out.num_nextn_predict_layers = config.value("num_nextn_predict_layers", 0);
  if (out.num_nextn_predict_layers < 0) throw Error("config.json: num_nextn_predict_layers must be >= 0");
}

std::optional<NextnPlan> nextn_plan(const ModelConfig& config, const std::function<LayerPlan(int layer)>& layer) {
  if (config.num_nextn_predict_layers < 1) return std::nullopt;
  const int index = config.num_hidden_layers;
  const std::string p = llama_style::layer_prefix(index);
  NextnPlan plan;
  plan.embedding = p + "embed_tokens.weight";
  plan.enorm = p + "enorm.weight";
  plan.hnorm = p + "hnorm.weight";
  plan.eh_proj = p + "eh_proj.weight";
  plan.layer = layer(index);
  plan.layer.ffn = FfnKind::Moe;
  plan.layer.mlp = {};
  plan.layer.moe = moe_names(config, p);
  plan.shared_head_norm = p + "shared_head.norm.weight";
  plan.shared_head = p + "shared_head.head.weight";
  return plan;
}

MoeTensorNames moe_names(const ModelConfig& config, const std::string& layer_prefix) {
  MoeTensorNames names = llama_style::mlp_moe_names(layer_prefix, config.num_experts);
  names.correction_bias = layer_prefix + "mlp.gate.e_score_correction_bias";
  if (config.shared_expert_intermediate_size > 0)
    names.shared_expert = llama_style::mlp_names(layer_prefix + "mlp.shared_experts.");
  return names;
}

}  // namespace moe::deepseek_style
