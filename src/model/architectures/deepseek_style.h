#pragma once
// The MoE layers DeepSeek-V3 and GLM-4.5 share: noaux_tc routing (sigmoid scores, a correction bias,
// grouped top-k), shared experts added as they are, and dense MLPs in the first layers; named under
// "mlp." as Qwen names its MoE block, plus "mlp.gate.e_score_correction_bias" and "mlp.shared_experts.".
#include <nlohmann/json_fwd.hpp>
#include <functional>
#include <optional>
#include <string>

#include "model/model_config.h"
#include "model/model_plan.h"

namespace moe::deepseek_style {

// Reads the routing (n_group, topk_group, norm_topk_prob, routed_scaling_factor; a scoring_func or
// topk_method other than sigmoid and noaux_tc is a moe::Error), n_shared_experts (their width is
// moe_intermediate_size · n_shared_experts), first_k_dense_replace (layers below it are dense) and
// num_nextn_predict_layers.
void read_moe_config(const nlohmann::json& config, ModelConfig& out);

// The next-token-prediction module of a model whose decoder layers `layer` describes (its decoder
// layer is layer(num_hidden_layers), made a MoE block whatever first_k_dense_replace says); none when
// config has no num_nextn_predict_layers.
std::optional<NextnPlan> nextn_plan(const ModelConfig& config, const std::function<LayerPlan(int layer)>& layer);

// The MoE block under "<layer_prefix>mlp.": router, correction bias, routed experts and, when the
// config has them, the shared experts.
MoeTensorNames moe_names(const ModelConfig& config, const std::string& layer_prefix);

}  // namespace moe::deepseek_style
