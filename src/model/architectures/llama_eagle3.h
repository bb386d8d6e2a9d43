#pragma once
// The tensor names of an EAGLE-3 draft head in SGLang's checkpoint layout (LlamaForCausalLMEagle3, as
// SpecForge trains and saves it; docs/speculative.md): `fc` over three target layers' hidden states,
// one Llama decoder layer `midlayer.` whose attention reads the concatenation of the normed token
// embedding and the normed hidden state, its own final norm and lm_head over a draft vocabulary, and
// the draft-to-target id table. The head has no "model." prefix.
#include <string>

#include "model/model_plan.h"

namespace moe {

// config.json "architectures"[0] of such a head.
inline constexpr const char* kEagle3Architecture = "LlamaForCausalLMEagle3";

struct Eagle3Plan {
  std::string fc;                // [H, 3 · target H]
  std::string embedding;         // [V, H]; a head may leave it out (the target's is used)
  std::string input_norm;        // [H]: on the token's embedding
  std::string hidden_norm;       // [H]: on the hidden state (fc's output, or the head's own when chained)
  AttentionTensorNames attention;  // q/k/v [heads · head_dim, 2H] (embedding half first), o [H, q]
  std::string post_attention_norm;  // [H]
  MlpTensorNames mlp;            // dense SwiGLU of intermediate_size
  std::string norm;              // [H]: before lm_head
  std::string lm_head;           // [draft V, H]
  std::string d2t;               // [draft V] int64: target id = draft id + d2t[draft id]
  std::string t2d;               // [V] bool: which target ids the draft vocabulary holds (not read)
};

Eagle3Plan eagle3_plan();

}  // namespace moe
