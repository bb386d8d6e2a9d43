#pragma once
// An EAGLE-3 draft head's config.json (SGLang's LlamaForCausalLMEagle3 layout; docs/speculative.md):
// the Llama sizes of its one decoder layer, its draft vocabulary, the target hidden size `fc` reads
// three of, and which target layers feed it.
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace moe {

struct Eagle3Config {
  // The decoder layer's sizes as a ModelConfig (hidden_size, heads, head_dim, rotary dims,
  // rope_theta, rms_norm_eps, intermediate_size, vocab_size of its embedding, tie_word_embeddings);
  // no experts.
  ModelConfig layer;
  int64_t draft_vocab_size = 0;    // lm_head's rows; vocab_size when the config gives none
  int64_t target_hidden_size = 0;  // the hidden size of the target layers fc reads; hidden_size when none
  // eagle_config.eagle_aux_hidden_state_layer_ids: the target layers whose outputs feed the head;
  // empty when the config names none (SGLang's default then applies: eagle3_captured_layers).
  std::vector<int> aux_layer_ids;
};

// Reads DIR/config.json; another architecture, a missing or out-of-range size is a moe::Error naming
// the field.
Eagle3Config load_eagle3_config(const std::string& dir);

// The target decoder layers whose input (the residual stream entering them) the head reads, in the
// order fc concatenates them, as SGLang captures them: layer id + 1 for each configured id (the output
// of layer id), else layers 2, L/2 and L - 3 of the target's L. A layer outside [0, L) is a moe::Error
// naming the ids.
std::vector<int> eagle3_captured_layers(const Eagle3Config& head, int target_layers);

}  // namespace moe
