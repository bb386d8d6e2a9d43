#pragma once
// Speculative decoding's settings (SGLang's flag names) and the NGRAM drafter: draft tokens proposed
// from n-gram matches in a request's own prompt and output (prompt lookup), as a tree when earlier
// occurrences continue differently.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/quantization.h"

namespace moe {

// NEXTN drafts with the target checkpoint's own next-token-prediction layer (DeepSeek-V3, GLM-4.5);
// EAGLE3 with an EAGLE-3 head (SGLang's LlamaForCausalLMEagle3 layout) over three of the target's
// layers' hidden states.
enum class SpeculativeAlgorithm { None, Ngram, Standalone, Nextn, Eagle3 };

// "" or "NONE" | "NGRAM" | "STANDALONE" | "NEXTN" | "EAGLE3" (any case); "EAGLE" is NEXTN, as SGLang
// takes it for these models when no draft checkpoint is given (EAGLE-1/2 heads are not supported);
// anything else is a moe::Error.
SpeculativeAlgorithm parse_speculative_algorithm(const std::string& name);

// --speculative-draft-model-quantization: "" (left out: the draft is quantized as the target, by
// --quantization) | "unquant" (the draft's checkpoint dtype, whatever the target's) | "int8" | "int4"
// (only the draft, with --quantization-group-size); anything else is a moe::Error naming the flag.
std::optional<Quantization> parse_draft_quantization(const std::string& name);

struct SpeculativeConfig {
  SpeculativeAlgorithm algorithm = SpeculativeAlgorithm::None;
  int num_steps = 4;         // --speculative-num-steps: deepest draft token, in tokens after the root
  int eagle_topk = 2;        // --speculative-eagle-topk: most children of one tree node
  int num_draft_tokens = 8;  // --speculative-num-draft-tokens: tokens per verify, the root included
  int max_tree_experts = 0;  // --max-tree-experts: expert pool of a verify pass per MoE layer; 0 = off
  std::string draft_model_path;  // --speculative-draft-model-path (STANDALONE's draft, EAGLE3's head)
  // --speculative-draft-model-quantization (STANDALONE): the draft's own; none: the target's
  std::optional<Quantization> draft_quantization;
  // NGRAM: the shortest and longest suffix of a request's tokens matched against its earlier tokens
  // (--speculative-ngram-min-match-window-size / --speculative-ngram-max-match-window-size).
  int ngram_min_match = 1;
  int ngram_max_match = 4;

  bool enabled() const { return algorithm != SpeculativeAlgorithm::None; }
  // Whether the worker fills the tree shapes the scheduler reserves (STANDALONE's draft model, NEXTN's
  // layer, EAGLE3's head), rather than the scheduler drafting them itself (NGRAM).
  bool worker_drafts() const {
    return algorithm == SpeculativeAlgorithm::Standalone || algorithm == SpeculativeAlgorithm::Nextn ||
           algorithm == SpeculativeAlgorithm::Eagle3;
  }
  // Whether --speculative-draft-model-path names a checkpoint the worker loads (STANDALONE, EAGLE3).
  bool takes_draft_path() const {
    return algorithm == SpeculativeAlgorithm::Standalone || algorithm == SpeculativeAlgorithm::Eagle3;
  }
};

// Checks the settings against the model's routing (a pool smaller than top_k cannot route) and the
// pipeline's stage count (draft trees are not verified across pipeline stages yet: speculation
// needs --pp-size 1), that STANDALONE and EAGLE3, and only they, have a draft checkpoint, and that only
// STANDALONE has a draft quantization; throws a moe::Error naming the flag. (A draft that fails to load or has another vocabulary is refused by the worker.)
void validate(const SpeculativeConfig& config, int top_k, int pp_size);

// Draft tokens after a root, as a tree: node i carries tokens[i] and hangs below parents[i] (-1:
// the root). Siblings carry distinct tokens.
struct DraftTree {
  std::vector<int32_t> tokens;
  std::vector<int32_t> parents;
  size_t size() const { return tokens.size(); }
};

// The tree shape the worker's drafter fills (STANDALONE, NEXTN, EAGLE3) for num_nodes nodes (root included), `width` nodes per layer: the parents
// of a tree filled layer by layer, each node below the first node of the layer above. Only the
// depths count: the worker's draft model chooses every node's token and real parent.
std::vector<int32_t> standalone_tree_shape(int num_nodes, int width);

// The suffix lengths prompt lookup tries, longest first.
struct NgramMatchWindow {
  int min = 1;
  int max = 4;
};

// Prompt lookup over `context` (prompt then output; its last token is the root, the next one to be
// fed): the longest suffix of window.min .. window.max tokens that occurred before is matched, and
// what followed each earlier occurrence (the most recent first) is merged into a tree of at most
// max_nodes nodes, max_depth deep, at most max_children per node. Empty when nothing matches.
DraftTree ngram_draft(std::span<const int32_t> context, int max_nodes, int max_depth, int max_children,
                      NgramMatchWindow window = {});

}  // namespace moe
