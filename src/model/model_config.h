#pragma once
// The architecture-independent description of a decoder-only MoE model, read from config.json.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/quantization.h"
#include "model/rope_scaling.h"

namespace moe {

// DeepSeek's multi-head latent attention sizes, as config.json names them.
struct MlaConfig {
  int64_t q_lora_rank = 0;  // 0: a plain q_proj (config "q_lora_rank": null)
  int64_t kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  bool rope_interleave = false;  // the rotary pairs are adjacent floats, not the two halves
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

// How a MoE layer's router picks its experts.
enum class RoutingKind {
  Softmax,         // softmax over the experts, top-k (moe/moe_runner.h's route_tokens)
  SigmoidGrouped,  // DeepSeek-V3's noaux_tc: sigmoid scores, correction bias, grouped top-k (grouped_sigmoid_router.h)
};

struct ModelConfig {
  std::string architecture;  // config.json "architectures"[0], e.g. "Qwen3MoeForCausalLM"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;         // dense MLP layers
  int64_t moe_intermediate_size = 0;     // one routed expert
  int64_t shared_expert_intermediate_size = 0;  // 0 = no shared expert
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;
  int rotary_dim = 0;  // the first rotary_dim of each head's dims rotate: head_dim · partial_rotary_factor
  int num_experts = 0;
  int num_experts_per_tok = 0;
  bool norm_topk_prob = true;
  RoutingKind routing = RoutingKind::Softmax;
  int n_group = 1;                     // SigmoidGrouped: the groups the experts are split into
  int topk_group = 1;                  // SigmoidGrouped: the groups whose experts may be chosen
  double routed_scaling_factor = 1.0;  // SigmoidGrouped: the factor on the routed experts' weights
  bool attention_bias = false;  // bias on q/k/v projections (Qwen2-MoE)
  bool qk_norm = false;         // RMSNorm on q and k per head (Qwen3-MoE)
  bool tie_word_embeddings = false;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  int64_t max_position_embeddings = 0;
  std::optional<YarnScaling> yarn;  // rope_type "yarn"; none: plain rotary embeddings
  std::optional<MlaConfig> mla;     // set by a family whose attention is multi-head latent attention
  std::vector<int> moe_layer_ids;  // decoder layers whose MLP is a MoE block, ascending
  // Next-token-prediction modules after the last decoder layer (DeepSeek-V3, GLM-4.5; model_plan.h's
  // NextnPlan), read only with --speculative-algorithm NEXTN.
  int num_nextn_predict_layers = 0;
  std::optional<GptqConfig> gptq;  // quantization_config of a GPTQ checkpoint

  int num_moe_layers() const { return static_cast<int>(moe_layer_ids.size()); }
  // The MoE index of decoder layer `layer`, or -1 for a dense layer.
  int moe_index(int layer) const;
};

// Reads DIR/config.json; an unknown architecture or unsupported setting is a moe::Error that
// lists what is supported.
ModelConfig load_model_config(const std::string& model_dir);

// How `loaded` differs from `serving`, naming the first field that differs and both values; none
// when they describe the same model. New weights may replace a model's only when none: every size
// the engine derived at start (KV pool, capture buffer, limits, tokenizer) holds for them too.
std::optional<std::string> config_mismatch(const ModelConfig& serving, const ModelConfig& loaded);

}  // namespace moe
