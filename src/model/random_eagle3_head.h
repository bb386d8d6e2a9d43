#pragma once
// Writes a random-weight EAGLE-3 head (SGLang's LlamaForCausalLMEagle3 layout, model/eagle3_head.h)
// for a target model: config.json and model.safetensors, the same bytes for the same seed. For tests
// and benchmarks of EAGLE3 speculation where no trained head exists.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/weight.h"
#include "model/random_checkpoint.h"

namespace moe {

struct ModelConfig;
struct Eagle3Config;

struct RandomEagle3HeadOptions {
  uint64_t seed = 0;
  DType dtype = DType::BF16;  // of every float tensor
  // The draft vocabulary: 0 is the target's whole vocabulary (no d2t/t2d written); fewer ids map to
  // target ids spread evenly over the target's vocabulary (draft d to d · V / draft_vocab_size).
  int64_t draft_vocab_size = 0;
  // eagle_config.eagle_aux_hidden_state_layer_ids; empty: none in config.json (SGLang's default layers).
  std::vector<int> aux_layer_ids;
};

// Every float tensor of a head of `head` (d2t and t2d are not floats: written beside).
std::vector<TensorSpec> eagle3_head_manifest(const Eagle3Config& head);

// A head of the target's hidden size, attention heads, head_dim and intermediate_size (the dense
// MLP's, or 2H where the target has none), into out_dir.
void write_random_eagle3_head(const ModelConfig& target, const std::string& out_dir,
                              const RandomEagle3HeadOptions& options);

}  // namespace moe
