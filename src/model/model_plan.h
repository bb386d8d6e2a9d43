#pragma once
// An architecture's description of one model (Architecture::plan): every tensor's name in the
// checkpoint and, per decoder layer, which kind of attention and of feed-forward block it runs. The
// CPU model, the CUDA model and the random-checkpoint manifest all build from it, so a family's
// names are spelled once, in its file under model/architectures/. An empty name is a tensor the
// model does not have. A new kind of attention or feed-forward block is a new enum value with its
// names in a field of its own; each backend's switch over the kinds is where it gets run.
#include <optional>
#include <string>
#include <vector>

namespace moe {

enum class AttentionKind {
  Gqa,  // grouped-query attention with rotary embeddings (AttentionTensorNames)
  Mla,  // DeepSeek's multi-head latent attention (MlaTensorNames)
};

enum class FfnKind {
  Dense,  // one SwiGLU MLP of width intermediate_size
  Moe,    // router, routed experts and an optional shared expert (gated or not)
};

// Shapes in terms of the config: q = num_attention_heads · head_dim, kv = num_key_value_heads · head_dim.
struct AttentionTensorNames {
  std::string q_weight, k_weight, v_weight, o_weight;  // [q, H], [kv, H], [kv, H], [H, q]
  std::string q_bias, k_bias, v_bias;                  // [q], [kv], [kv]; empty without attention bias
  std::string q_norm, k_norm;                          // [head_dim] per-head RMSNorm; empty without it
};

// Multi-head latent attention; shapes in terms of the config's MlaConfig (n heads, qk = nope + rope):
// q from q_a [q_lora, H] → q_a_norm [q_lora] → q_b [n·qk, q_lora], or from q [n·qk, H] without a q LoRA;
// kv_a [kv_lora + rope, H] gives the latent (→ kv_a_norm [kv_lora]) and the one rotary key shared by
// the heads; kv_b [n·(nope + v), kv_lora] expands the latent into each head's k_nope and v; o [H, n·v].
struct MlaTensorNames {
  std::string q_weight;                       // empty with a q LoRA
  std::string q_a_weight, q_a_norm, q_b_weight;  // empty without one
  std::string kv_a_weight, kv_a_norm, kv_b_weight, o_weight;
};

// A SwiGLU MLP, down(silu(gate(x)) * up(x)), of width I: [I, H], [I, H], [H, I].
struct MlpTensorNames {
  std::string gate, up, down;
};

struct MoeTensorNames {
  std::string router;                           // [E, H]
  std::string correction_bias;                  // [E]: RoutingKind::SigmoidGrouped's bias for choosing
  std::vector<MlpTensorNames> experts;          // E routed experts of width moe_intermediate_size
  std::optional<MlpTensorNames> shared_expert;  // width shared_expert_intermediate_size
  std::string shared_gate;                      // [1, H]: the shared expert's sigmoid gate; empty: added as is
};

struct LayerPlan {
  std::string input_norm, post_attention_norm;  // [H]: the RMSNorms before attention and before the FFN
  AttentionKind attention = AttentionKind::Gqa;
  AttentionTensorNames gqa;  // AttentionKind::Gqa
  MlaTensorNames mla;        // AttentionKind::Mla
  FfnKind ffn = FfnKind::Dense;
  MlpTensorNames mlp;  // FfnKind::Dense
  MoeTensorNames moe;  // FfnKind::Moe
};

// The next-token-prediction (MTP) module DeepSeek-V3 and GLM-4.5 checkpoints ship after the last
// decoder layer, a one-layer draft over the model's hidden states: eh_proj(concat(enorm(embed(next
// token)), hnorm(hidden))), its own decoder layer, then shared_head's norm and head. Checkpoints
// repeat the model's embedding and lm_head inside it; where one lacks them the model's are used.
struct NextnPlan {
  std::string embedding;         // [V, H]
  std::string enorm, hnorm;      // [H]
  std::string eh_proj;           // [H, 2H]: the embedding's half first
  LayerPlan layer;               // attention as the model's layers, and always a MoE block
  std::string shared_head_norm;  // [H]
  std::string shared_head;       // [V, H]
};

struct ModelPlan {
  std::string embedding;   // [V, H]
  std::string final_norm;  // [H]
  std::string lm_head;     // [V, H]; empty when tied to the embedding
  std::vector<LayerPlan> layers;
  std::optional<NextnPlan> nextn;  // the config's num_nextn_predict_layers > 0 (the first one)
};

}  // namespace moe
