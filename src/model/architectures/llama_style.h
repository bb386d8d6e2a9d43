#pragma once
// The Llama-style decoder that the supported families' Hugging Face checkpoints share, for their
// files to build plans from: the names of the embedding, the norms, the attention and the dense
// MLP, the "mlp." MoE naming of Qwen (and DeepSeek), and the layer sequence of GQA attention then
// a MoE block on config.moe_layer_ids and a dense MLP elsewhere.
#include <functional>
#include <string>

#include "model/model_config.h"
#include "model/model_plan.h"

namespace moe::llama_style {

// "model.layers.<layer>.": what every tensor of decoder layer `layer` is named after.
std::string layer_prefix(int layer);

// The GQA attention of the layer named by `layer_prefix`, under its "self_attn.": q/k/v/o_proj, their
// biases with config.attention_bias, q/k_norm with config.qk_norm.
AttentionTensorNames attention_names(const ModelConfig& config, const std::string& layer_prefix);

// PREFIX + "{gate,up,down}_proj.weight".
MlpTensorNames mlp_names(const std::string& prefix);

// The MoE block of the layer named by `layer_prefix`, under its "mlp.": router "mlp.gate" and the
// routed experts "mlp.experts.<e>." + mlp_names; no shared expert.
MoeTensorNames mlp_moe_names(const std::string& layer_prefix, int num_experts);

// Decoder layer `layer`: GQA attention, then `moe_names(layer_prefix)` on config.moe_layer_ids and a
// dense MLP elsewhere.
LayerPlan decoder_layer_plan(const ModelConfig& config, int layer,
                             const std::function<MoeTensorNames(const std::string& layer_prefix)>& moe_names);

// The whole model's plan; `moe_names(layer_prefix)` names the MoE block of each MoE layer.
ModelPlan decoder_plan(const ModelConfig& config,
                       const std::function<MoeTensorNames(const std::string& layer_prefix)>& moe_names);

}  // namespace moe::llama_style
